/*
 * park: kiln-vmm started before its sandbox is known (kilnd's zygotes,
 * docs/architecture.md "The fork path"). `kiln-vmm --park FD` makes KVM's
 * part of the VM (main.c: kiln_vm_prepare, nothing of any sandbox), then
 * waits on the SOCK_SEQPACKET socket FD for one message, its real command
 * line with its descriptors (vmm/control/park_proto.h), and goes on
 * exactly as a kiln-vmm started with that command line: every step of
 * setup.h (files opened, the rest of the VM made, jail entered) happens
 * after the message. The socket's end (kilnd gone before it sent
 * anything) ends the parked kiln-vmm quietly.
 */
#ifndef KILN_VMM_PARK_H
#define KILN_VMM_PARK_H

#include "lib/base/err.h"
#include "vmm/control/park_proto.h"

/*
 * `--park FD` as argv[1..2]: wait for the message and put its command
 * line in *argc_out and *argv_out (allocated for the process's life). 0: go
 * on with it; 1: the socket ended first (exit quietly); -errno with e.
 */
int park_wait(int argc, char **argv, int *argc_out, char ***argv_out, struct err *e);

#endif

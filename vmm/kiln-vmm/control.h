/*
 * control: kiln-vmm's control socket server (commands: control_proto.h).
 *
 * control_start() binds a Unix stream socket at `path` (mode 0600; an
 * existing socket file there is replaced, any other file refused) and
 * serves it from its own thread, one connection at a time, until
 * control_stop(). Commands act on `vm` through libkiln's public API
 * (kiln/vm.h), like any embedder's would, so a command never races a vCPU
 * or the device thread. Part of the kiln-vmm program, not of libkiln.
 */
#ifndef KILN_CONTROL_H
#define KILN_CONTROL_H

#include "lib/base/err.h"
#include <kiln/vm.h>

struct control;

int control_start(kiln_vm *vm, const char *path, struct control **out, struct err *e);
/* Stop serving, close the socket and unlink its path. NULL is fine. */
void control_stop(struct control *c);

#endif

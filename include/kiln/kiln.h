/*
 * kiln/kiln.h: all of libkiln. Build with `pkg-config --cflags --libs kiln`.
 *
 *   kiln/vm.h     configure, create, run, pause, snapshot, restore, fork a VM
 *   kiln/agent.h  talk to the guest agent (exec, processes, files, tar)
 *   kiln/jail.h   confine the process before the guest runs
 */
#ifndef KILN_PUBLIC_KILN_H
#define KILN_PUBLIC_KILN_H

#include "common.h"
#include "version.h"
#include "vm.h"
#include "agent.h"
#include "jail.h"

#endif

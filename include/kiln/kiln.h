/*
 * kiln/kiln.h: all of libkiln. Build with `pkg-config --cflags --libs kiln`.
 *
 *   kiln/vm.h     configure, create, run, pause, snapshot, restore, fork a VM
 *   kiln/agent.h  talk to the guest agent (exec, processes, files, tar)
 */
#ifndef KILN_PUBLIC_KILN_H
#define KILN_PUBLIC_KILN_H

#include "common.h"
#include "version.h"
#include "vm.h"
#include "agent.h"

#endif

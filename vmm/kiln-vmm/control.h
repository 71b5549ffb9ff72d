/*
 * control: kiln-vmm's control socket server (commands: control_proto.h).
 *
 * control_open() binds a Unix stream socket at `path` (mode 0600; an
 * existing socket file there is replaced, any other file refused);
 * control_start() serves it from its own thread, one connection at a
 * time, until control_stop(). Two steps so kiln-vmm can enter its jail,
 * which must be done single-threaded, between them. Commands act on `vm` through libkiln's public API
 * (kiln/vm.h), like any embedder's would, so a command never races a vCPU
 * or the device thread. Part of the kiln-vmm program, not of libkiln.
 */
#ifndef KILN_CONTROL_H
#define KILN_CONTROL_H

#include "lib/base/err.h"
#include <kiln/vm.h>

struct control;

int control_open(kiln_vm *vm, const char *path, struct control **out, struct err *e);
int control_start(struct control *c, struct err *e);
/* Stop serving (if started), close the socket and unlink its path. NULL
 * is fine. */
void control_stop(struct control *c);

#endif

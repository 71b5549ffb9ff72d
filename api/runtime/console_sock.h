/*
 * console_sock: a container's terminal handed to the engine as runc hands
 * it. With process.terminal the engine passes --console-socket PATH (a
 * listening SOCK_STREAM unix socket: conmon's, containerd's shim's); the
 * runtime connects, sends ONE message whose data is the pty master's name
 * and whose control part is exactly one SCM_RIGHTS descriptor, the
 * master, and closes. runc's receiver (libcontainer/utils RecvFile)
 * refuses anything else, and conmon fails "Runtime did not set up
 * terminal" when no master came before create exited.
 *
 * Contract: thin syscalls, no state, errors as -errno with e saying what
 * and what to do. console_sock_recv is the receiving side as conmon does
 * it (one recvmsg, the first SCM_RIGHTS descriptor): for tests, and for
 * a kiln-runtime that ever receives a console itself.
 */
#ifndef KILN_CONSOLE_SOCK_H
#define KILN_CONSOLE_SOCK_H

#include <stddef.h>

#include "lib/base/err.h"

/* runc's RecvFile reads the name into a buffer this big. */
#define CONSOLE_NAME_MAX 4096
/* The name runc sends: containerd/console opens the master as
 * /dev/ptmx, and the file's name goes as the message's data. */
#define CONSOLE_MASTER_NAME "/dev/ptmx"

/* A new pty: *master (O_RDWR|O_NOCTTY|O_CLOEXEC, unlocked) and *slave
 * (O_RDWR|O_NOCTTY|O_CLOEXEC). */
int console_pty_open(int *master, int *slave, struct err *e);

/* A new pty whose slave is raw (lib/base/term_mode): the guest's own
 * pty does the line discipline, once, so the host's must pass every byte
 * as it is. */
int console_pty_open_raw(int *master, int *slave, struct err *e);

/* The terminal's size (TIOCSWINSZ on either end; the kernel sends the
 * foreground group SIGWINCH) and reading it back (TIOCGWINSZ): the
 * shim's SIGWINCH becomes the guest's resize. */
int console_pty_set_size(int fd, unsigned rows, unsigned cols, struct err *e);
int console_pty_get_size(int fd, unsigned *rows, unsigned *cols, struct err *e);

/* Connect to the engine's socket at path (a SOCK_STREAM unix socket; a
 * path longer than sun_path is reached through its directory's
 * descriptor). *fd is the connection. */
int console_sock_connect(const char *path, int *fd, struct err *e);

/* One sendmsg on sock: name as the data, master as the one SCM_RIGHTS
 * descriptor. */
int console_sock_send(int sock, int master, const char *name, struct err *e);

/* Connect to path, send master under CONSOLE_MASTER_NAME, close. */
int console_sock_hand_over(const char *path, int master, struct err *e);

/* One recvmsg on sock: *fd the descriptor received (O_CLOEXEC), name
 * (cap bytes, NUL-terminated) its data. -EBADMSG when the message held
 * no descriptor, more than one, or was cut. */
int console_sock_recv(int sock, int *fd, char *name, size_t cap, struct err *e);

#endif

/*
 * state_lock: one kilnd per state directory (docs/api.md "The state
 * directory"). A second kilnd on the same --state-dir would mark the
 * first one's running sandboxes crashed, unlink their sockets and remove
 * their directories; it has to stop before it reads or touches anything.
 *
 * Contract:
 *  - The lock is a POSIX record lock (fcntl F_SETLK, write lock over the
 *    whole file) on <state>/kilnd.lock, taken before anything else of the
 *    state directory is read or changed, held until the process ends.
 *    The kernel drops it when kilnd dies, kill -9 included.
 *  - Why a record lock and not flock or an OFD lock: those belong to the
 *    open file description, which a forked child shares from fork() until
 *    its exec or exit, so a kiln-vmm child (or, later, a VMM that outlives
 *    kilnd) could keep the state directory locked after kilnd died. A
 *    record lock belongs to the process: fork() never passes it on. The
 *    descriptor is O_CLOEXEC as well.
 *  - The cost of record locks: closing *any* descriptor of the lock file
 *    drops the lock, so nothing else in kilnd may open kilnd.lock.
 *  - The file holds "pid N\nsocket PATH\n" of the holder, rewritten at
 *    every take, so a refused kilnd can name the one that runs. The pid in
 *    the refusal comes from the kernel (F_GETLK) where it can see it.
 */
#ifndef KILN_STATE_LOCK_H
#define KILN_STATE_LOCK_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/base/err.h"

#define STATE_LOCK_FILE "kilnd.lock"

/*
 * Lock state_dir (an existing directory) for this process, writing its pid
 * and socket_path (made absolute against the working directory) into the
 * lock file. 0 with *fd (keep it open for the process's life), or -1 with
 * e: another kilnd holds it ("state directory D is in use by kilnd pid
 * N (its socket S); stop it or use another --state-dir") or the file
 * cannot be opened, locked or written.
 */
int state_lock_take(const char *state_dir, const char *socket_path, int *fd, struct err *e);

/* The lock file's contents for pid and socket into out[cap]. Pure. */
void state_lock_format(pid_t pid, const char *socket_path, char *out, size_t cap);

/*
 * Read a lock file's contents (buf, len bytes, not NUL-terminated: it may
 * be anything) into *pid (0: none) and socket[cap] ("": none). The path
 * ends at its newline; control bytes and invalid UTF-8 in it become '?'
 * (text_clean's term rule), so a message built from it is one clean
 * line. Pure.
 */
void state_lock_parse(const char *buf, size_t len, pid_t *pid, char *socket, size_t cap);

#endif

/*
 * capped_log: a log file fed from a child's pipe that a hostile child
 * cannot grow without bound: once it holds `cap` bytes it starts over,
 * the full one kept as its ".1" (one rotation: at most 2 * cap bytes on
 * disk). kilnd's keeper keeps kiln-vmm's console and stderr so, and
 * kiln-runtime's shim kiln-vmm's stderr.
 *
 * Contract: names are opened beneath dirfd without following a link
 * (O_NOFOLLOW), mode 0600. A failed write (a full disk) costs the log,
 * never the writer's caller: nothing here fails loudly after open.
 */
#ifndef KILN_CAPPED_LOG_H
#define KILN_CAPPED_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capped_log {
	int dirfd;
	const char *name, *old; /* "vmm.log" and "vmm.log.1" */
	int fd, pipe_r;         /* pipe_r: the child's end we read (capped_log_attach), -1: none */
	uint64_t written, cap;
	/* Optional: each chunk capped_log_pump copies, as it is (a reader of
	 * the child's lines: kilnd counts its egress proxies' decisions). */
	void (*tap)(void *arg, const char *p, size_t n);
	void *tap_arg;
};

/* Start l afresh: old removed, name truncated. 0, or -errno (l->fd -1). */
int capped_log_open(struct capped_log *l, int dirfd, const char *name, const char *old,
		    uint64_t cap);

/* Append p[0..n), rotating first when it would pass the cap. */
void capped_log_write(struct capped_log *l, const void *p, size_t n);

/* l reads pipe_r (non-blocking) from now on and owns it. */
void capped_log_attach(struct capped_log *l, int pipe_r);

/* What one pump takes at most: a writer that never stops cannot hold its
 * caller's loop (the rest waits for the next poll). */
#define CAPPED_LOG_PUMP_MAX (64u * 1024)

/* Copy what l->pipe_r holds now (at most CAPPED_LOG_PUMP_MAX) into the
 * log; false once the pipe ended (then closed, pipe_r -1). */
bool capped_log_pump(struct capped_log *l);

/* Close the file and the pipe. */
void capped_log_close(struct capped_log *l);

#endif

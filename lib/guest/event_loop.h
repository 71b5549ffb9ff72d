/*
 * event_loop: the VM's device thread. One epoll loop per VM waits on queue
 * notification eventfds (KVM ioeventfds) and device backend fds (tap,
 * vsock Unix sockets) and calls each fd's handler in that one thread, so
 * device models need no locking against each other.
 */
#ifndef KILN_EVENT_LOOP_H
#define KILN_EVENT_LOOP_H

#include <pthread.h>
#include <stdint.h>

#define EVENT_LOOP_MAX 256 /* fds and timers watched at once; memory follows the number in use */

/* `events` are EPOLLIN/EPOLLOUT/... as returned by epoll. */
typedef void event_fn(void *ctx, int fd, uint32_t events);

struct event_loop;

/* Create the loop (not yet running). 0 or -errno. */
int event_loop_create(struct event_loop **out);
/* Watch `fd` for `events` (EPOLLIN | ...); replaces an earlier watch of fd.
 * 0, -ENOSPC (EVENT_LOOP_MAX watched), -ENOMEM, or epoll's -errno. */
int event_loop_add(struct event_loop *l, int fd, uint32_t events, event_fn *fn, void *ctx);
/* Change what `fd` is watched for (e.g. add EPOLLOUT while output is queued). */
int event_loop_mod(struct event_loop *l, int fd, uint32_t events);
int event_loop_del(struct event_loop *l, int fd);
/* Run `fn(ctx)` in the loop thread after `ms` milliseconds (one-shot). */
int event_loop_timer(struct event_loop *l, unsigned ms, void (*fn)(void *ctx), void *ctx);
/*
 * `enter(ctx)` is the first thing the loop's thread runs, on itself,
 * before any handler (libkiln installs the device thread's seccomp filter
 * there); below 0 the thread handles nothing. Set before the first start.
 */
void event_loop_set_enter(struct event_loop *l, int (*enter)(void *ctx), void *ctx);
/* Start the thread (the first time), or wake it from a stop. 0 or -errno. */
int event_loop_start(struct event_loop *l);
/* Stop handling events: returns once the thread is parked, out of every
 * handler; safe when never started. A stopped loop keeps its watches and
 * may be started again (that is how a VM pauses). The thread itself ends
 * in event_loop_destroy. */
void event_loop_stop(struct event_loop *l);
void event_loop_destroy(struct event_loop *l);

#endif

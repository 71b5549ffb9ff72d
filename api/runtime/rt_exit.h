/*
 * rt_exit: how a container's end becomes its shim's end. The pid the
 * engine waits on is the shim's (conmon and containerd's shim reap it as
 * subreaper and read its wait status as the container's), so the shim
 * ends as the container's process did: exit(code), or death by the same
 * signal (conmon then reports 128 + signal, as for runc: 137 for KILL).
 * A VM that ended before its container reported is exit 255.
 *
 * The shim also writes the end to <id>/exit, one line, for `state`
 * and `delete` after the shim is gone:
 *
 *   exit_code=7 signal=0 vm_crashed=0
 *
 * Contract: pure. Decoding refuses anything but that one line with
 * numbers in range (the file is the shim's, under a 0700 root, and still
 * read as untrusted bytes).
 */
#ifndef KILN_RT_EXIT_H
#define KILN_RT_EXIT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/err.h"

#define RT_EXIT_FILE "exit"
#define RT_EXIT_VM_CRASHED 255
#define RT_EXIT_LINE_MAX 64

/* What ended the container, as the agent's exit message says it. */
struct rt_exit {
	int exit_code;   /* 0..255, -1: a signal ended it */
	int signo;       /* 1..64, 0: none */
	bool vm_crashed; /* kiln-vmm ended before the agent reported */
};

enum rt_end_kind {
	RT_END_EXIT,   /* exit(value) */
	RT_END_SIGNAL, /* raise(value) with its default action, core dumps off */
};

struct rt_end {
	enum rt_end_kind kind;
	int value;
};

/* The shim's end for x. A signal whose default action does not end a
 * process (CHLD, CONT, STOP, TSTP, TTIN, TTOU, URG, WINCH) cannot be
 * re-raised to the same effect: exit(128 + signal), what a shell says. */
void rt_exit_end(const struct rt_exit *x, struct rt_end *end);

/* The exit file's line into buf[RT_EXIT_LINE_MAX]; its length. */
size_t rt_exit_encode(const struct rt_exit *x, char *buf);

/* The exit file's n bytes; 0, or -EINVAL with e. */
int rt_exit_decode(const char *buf, size_t n, struct rt_exit *x, struct err *e);

#endif

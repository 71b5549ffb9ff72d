/*
 * egress_proxy_seccomp: the seccomp allowlist kilnd puts on each
 * sandbox's egress proxy (kiln-egress) before it executes it
 * (docs/security.md, "The egress proxy").
 *
 * The proxy parses what guests and upstream servers send (PROXY headers,
 * TLS, HTTP) and connects to the internet from the host's network
 * namespace, so it is built to be compromised: it may read and write
 * files and descriptors it holds, make threads, resolve names and open
 * IPv4, IPv6 and netlink (its own addresses) sockets, accept on its
 * listening socket, and nothing else: every other call fails with EPERM
 * (no ptrace, no namespaces or mounts, no bpf, io_uring, userfaultfd,
 * perf, keyrings, no Unix socket of its own (the host's abstract ones
 * are in its network namespace), no fork: clone only with CLONE_THREAD,
 * clone3 ENOSYS so the C library falls back to clone). A call of a
 * foreign ABI (i386, x32) kills it. The filter is built once by kilnd
 * (libseccomp), kept as a classic BPF program, and installed in the
 * proxy's child with one system call after NO_NEW_PRIVS, so the child of
 * a threaded kilnd allocates nothing.
 */
#ifndef KILN_EGRESS_PROXY_SECCOMP_H
#define KILN_EGRESS_PROXY_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/filter.h>

#include "lib/base/err.h"

struct egress_filter {
	struct sock_filter *insns; /* malloc'd */
	unsigned short len;
};

/* Build it: 0, or -errno with e. */
int egress_filter_build(struct egress_filter *f, struct err *e);
void egress_filter_free(struct egress_filter *f);

/* Install f on the calling thread's process (NO_NEW_PRIVS must be set):
 * 0 or -errno; only system calls. */
int egress_filter_install(const struct egress_filter *f);

#endif

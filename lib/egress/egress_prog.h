/*
 * egress_prog: an egress table (egress_policy.h) as the eBPF programs the
 * kernel runs on a cgroup's connect() and sendmsg() (BPF_PROG_TYPE_
 * CGROUP_SOCK_ADDR), written out instruction by instruction.
 *
 * Why generated code and not a compiled program reading a map: the table
 * is the program, so a rule change loads a new program and swaps it in
 * (egress_cgroup.h) instead of rewriting a map under a running program (no
 * moment where half a table is live), and kiln needs neither a BPF
 * toolchain nor a loader library: one bpf(2) call loads it.
 *
 * Contract:
 *  - Pure: fills an instruction array, asks nothing of the system.
 *  - The program returns 1 (go on) or 0 (the kernel fails the call with
 *    EPERM), exactly as egress_policy_allows() decides for the
 *    destination address, the socket's protocol and the destination port.
 *  - An IPv4 hook (connect4, sendmsg4) checks the IPv4 entries; an IPv6
 *    hook checks IPv4-mapped destinations (::ffff:a.b.c.d) against the
 *    IPv4 entries and every other one against the IPv6 entries.
 *  - Straight-line code with forward jumps only (each entry jumps to the
 *    next when it does not match), so the verifier's work grows with the
 *    table, one pass; no helper is called, no map is used.
 */
#ifndef KILN_EGRESS_PROG_H
#define KILN_EGRESS_PROG_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/bpf.h>

#include "lib/egress/egress_policy.h"

/* The most instructions one entry takes, and so the buffer a table needs. */
#define EGRESS_INSNS_PER_ENTRY 24
#define EGRESS_INSNS_FIXED 24
#define EGRESS_INSNS_MAX(n) (EGRESS_INSNS_FIXED + EGRESS_INSNS_PER_ENTRY * (n))

/*
 * Write the program of one hook family (v6: an IPv6 hook) for p into
 * insns (room for EGRESS_INSNS_MAX(p->n)). The count, or -E2BIG when the
 * table is larger than EGRESS_ENTRIES_MAX or an IPv6 hook's jump over the
 * IPv4 entries would not fit a jump's 16-bit offset (over about 3,200
 * IPv4 entries; a full rule set and 1024 host addresses make about 2,100).
 */
int egress_prog_build(const struct egress_policy *p, bool v6, struct bpf_insn *insns);

#endif

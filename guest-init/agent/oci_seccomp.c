/* A container's seccomp filter compiled and installed; see oci_seccomp.h. */
#include "guest-init/agent/oci_seccomp.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/seccomp.h>

#define X32_SYSCALL_BIT 0x40000000u
#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
/* the low and high 32 bits of argument i (little-endian) */
#define OFF_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define OFF_HI(i) (OFF_LO(i) + 4)

struct prog {
	struct sock_filter *f;
	size_t n;
};

static void emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (p->n < BPF_MAXINSNS)
		p->f[p->n] = (struct sock_filter){ code, jt, jf, k };
	p->n++; /* counted past the end: the caller refuses the length */
}

static uint32_t ret_of(enum agent_sc_action a, uint32_t err)
{
	switch (a) {
	case AGENT_SC_ALLOW:
		return SECCOMP_RET_ALLOW;
	case AGENT_SC_ERRNO:
		return SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA);
	case AGENT_SC_KILL_THREAD:
		return SECCOMP_RET_KILL_THREAD;
	case AGENT_SC_KILL_PROCESS:
		return SECCOMP_RET_KILL_PROCESS;
	case AGENT_SC_TRAP:
		return SECCOMP_RET_TRAP;
	case AGENT_SC_TRACE:
		return SECCOMP_RET_TRACE | (err & SECCOMP_RET_DATA);
	case AGENT_SC_LOG:
		return SECCOMP_RET_LOG;
	default:
		return SECCOMP_RET_KILL_PROCESS;
	}
}

/* Instructions one condition takes (arg_block's). */
static size_t arg_len(const struct agent_sc_arg *a)
{
	switch (a->op) {
	case AGENT_SC_EQ:
	case AGENT_SC_NE:
		return 4;
	case AGENT_SC_MASKED_EQ:
		return 6;
	default:
		return 5;
	}
}

/*
 * One condition, falling through when it holds and jumping `fail`
 * instructions past its own end when it does not: the 64-bit value
 * compared as its high word, then its low one.
 */
static void arg_block(struct prog *p, const struct agent_sc_arg *a, size_t fail)
{
	uint32_t hi = (uint32_t)(a->value >> 32), lo = (uint32_t)a->value;
	size_t len = arg_len(a);
	/* jump offsets from the instruction at position i (0-based) in the block */
#define TO_FAIL(i) ((uint8_t)(len - (i)-1 + (fail)))
#define TO_PASS(i) ((uint8_t)(len - (i)-1))

	emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_HI(a->index));
	switch (a->op) {
	case AGENT_SC_EQ:
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_FAIL(1), hi);
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_LO(a->index));
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_FAIL(3), lo);
		break;
	case AGENT_SC_NE:
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_PASS(1), hi);
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_LO(a->index));
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, TO_FAIL(3), 0, lo);
		break;
	case AGENT_SC_MASKED_EQ:
		emit(p, BPF_ALU | BPF_AND | BPF_K, 0, 0, hi);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_FAIL(2), (uint32_t)(a->value_two >> 32));
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_LO(a->index));
		emit(p, BPF_ALU | BPF_AND | BPF_K, 0, 0, lo);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_FAIL(5), (uint32_t)a->value_two);
		break;
	case AGENT_SC_GT:
	case AGENT_SC_GE:
		/* above in the high word: holds; below: fails; equal: the low word decides */
		emit(p, BPF_JMP | BPF_JGT | BPF_K, TO_PASS(1), 0, hi);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_FAIL(2), hi);
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_LO(a->index));
		emit(p, BPF_JMP | (a->op == AGENT_SC_GT ? BPF_JGT : BPF_JGE) | BPF_K, 0, TO_FAIL(4),
		     lo);
		break;
	default: /* LT, LE: the negation of GE, GT */
		emit(p, BPF_JMP | BPF_JGT | BPF_K, TO_FAIL(1), 0, hi);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, TO_PASS(2), hi);
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_LO(a->index));
		emit(p, BPF_JMP | (a->op == AGENT_SC_LT ? BPF_JGE : BPF_JGT) | BPF_K, TO_FAIL(4), 0,
		     lo);
		break;
	}
#undef TO_FAIL
#undef TO_PASS
}

/*
 * A rule: the number compared (A holds it), each condition, the action;
 * a condition that fails reloads the number for the next rule.
 */
static void rule(struct prog *p, const struct agent_sc_rule *r)
{
	size_t body = 0;

	for (size_t i = 0; i < r->nargs; i++)
		body += arg_len(&r->args[i]);
	/* past the conditions, the return and (with conditions) the reload */
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(body + 1 + (r->nargs ? 1 : 0)), r->nr);
	for (size_t i = 0, left = body; i < r->nargs; i++) {
		left -= arg_len(&r->args[i]);
		/* from the block's end: the rest of the blocks and the return */
		arg_block(p, &r->args[i], left + 1);
	}
	emit(p, BPF_RET | BPF_K, 0, 0, ret_of(r->action, r->errno_ret));
	if (r->nargs)
		emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_NR);
}

int oci_seccomp_compile(const struct agent_seccomp *s, struct oci_seccomp *out, char *why,
			size_t whysz)
{
	struct prog p = { .f = calloc(BPF_MAXINSNS, sizeof(struct sock_filter)) };

	out->prog = (struct sock_fprog){ 0 };
	out->flags = (s->log ? SECCOMP_FILTER_FLAG_LOG : 0) |
		(s->spec_allow ? SECCOMP_FILTER_FLAG_SPEC_ALLOW : 0);
	if (!p.f) {
		snprintf(why, whysz, "out of memory");
		return -ENOMEM;
	}
	emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_ARCH);
	emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
	emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS);
	emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)OFF_NR);
	emit(&p, BPF_JMP | BPF_JSET | BPF_K, 0, 1, X32_SYSCALL_BIT);
	emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS);
	for (size_t i = 0; i < s->nrules; i++)
		rule(&p, &s->rules[i]);
	emit(&p, BPF_RET | BPF_K, 0, 0, ret_of(s->default_action, s->default_errno));
	if (p.n > BPF_MAXINSNS) {
		snprintf(why, whysz, "the filter takes %zu BPF instructions, the kernel at most %d",
			 p.n, BPF_MAXINSNS);
		free(p.f);
		return -E2BIG;
	}
	out->prog = (struct sock_fprog){ .len = (unsigned short)p.n, .filter = p.f };
	return 0;
}

void oci_seccomp_free(struct oci_seccomp *f)
{
	free(f->prog.filter);
	f->prog = (struct sock_fprog){ 0 };
}

int oci_seccomp_install(const struct oci_seccomp *f)
{
	if (!f || !f->prog.len)
		return 0;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, f->flags, &f->prog);
}

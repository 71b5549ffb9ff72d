/* An egress table as cgroup sock_addr programs; see egress_prog.h. */
#include "lib/egress/egress_prog.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Registers: r6 the context (struct bpf_sock_addr), r7 the destination
 * port and r9 the IPv4 destination in host order (so a prefix is a mask
 * of the high bits), r8 the socket's IP protocol, r1 scratch, r0 the
 * verdict.
 */
enum { R0 = 0, R1 = 1, R6 = 6, R7 = 7, R8 = 8, R9 = 9 };
#define CTX(f) ((int16_t)offsetof(struct bpf_sock_addr, f))
/* A jump's offset until the end of its entry is known. */
#define TO_NEXT INT16_MIN

struct emit {
	struct bpf_insn *i;
	size_t n;
};

static void ins(struct emit *m, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	m->i[m->n++] = (struct bpf_insn){
		.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm
	};
}

static void ldx_w(struct emit *m, uint8_t dst, int16_t off)
{
	ins(m, BPF_LDX | BPF_MEM | BPF_W, dst, R6, off, 0);
}

/* Network order to host order, also zeroing the high bits. */
static void to_host(struct emit *m, uint8_t reg, int bits)
{
	ins(m, BPF_ALU | BPF_END | BPF_TO_BE, reg, 0, 0, bits);
}

/* 32-bit compares: a 64-bit one would sign-extend an immediate such as 0xa9fe0000. */
static void jmp32(struct emit *m, uint8_t op, uint8_t reg, uint32_t imm, int16_t off)
{
	ins(m, BPF_JMP32 | op | BPF_K, reg, 0, off, (int32_t)imm);
}

static void ret(struct emit *m, bool allow)
{
	ins(m, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, allow ? 1 : 0);
	ins(m, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static uint32_t word(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint32_t mask_of(unsigned bits)
{
	return bits >= 32 ? 0xffffffffu : bits == 0 ? 0 : ~0u << (32 - bits);
}

/* The address words of an entry: r1 = word, masked, != the entry's: next. */
static void match_addr(struct emit *m, const struct net_cidr *c)
{
	unsigned words = c->addr.family == NET_AF4 ? 1 : 4;

	for (unsigned k = 0; k < words; k++) {
		unsigned bits = c->prefix > 32 * k ? c->prefix - 32 * k : 0;
		uint32_t mask = mask_of(bits);

		if (!bits)
			break;
		if (words == 1) {
			ins(m, BPF_ALU | BPF_MOV | BPF_X, R1, R9, 0, 0);
		} else {
			ldx_w(m, R1, (int16_t)(CTX(user_ip6) + 4 * (int)k));
			to_host(m, R1, 32);
		}
		if (mask != 0xffffffffu)
			ins(m, BPF_ALU | BPF_AND | BPF_K, R1, 0, 0, (int32_t)mask);
		jmp32(m, BPF_JNE, R1, word(c->addr.b + 4 * k) & mask, TO_NEXT);
	}
}

static void match_entry(struct emit *m, const struct egress_entry *x)
{
	size_t start = m->n;

	match_addr(m, &x->cidr);
	if (x->proto)
		jmp32(m, BPF_JNE, R8, x->proto, TO_NEXT);
	if (x->port_lo) {
		/* Ports only mean something for TCP and UDP. */
		if (!x->proto) {
			jmp32(m, BPF_JEQ, R8, 6, 1);
			jmp32(m, BPF_JNE, R8, 17, TO_NEXT);
		}
		jmp32(m, BPF_JLT, R7, x->port_lo, TO_NEXT);
		jmp32(m, BPF_JGT, R7, x->port_hi, TO_NEXT);
	}
	ret(m, x->allow);
	for (size_t i = start; i < m->n; i++)
		if (m->i[i].off == TO_NEXT)
			m->i[i].off = (int16_t)(m->n - i - 1);
}

/* The entries of one family, then the default. */
static void block(struct emit *m, const struct egress_policy *p, int family)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].cidr.addr.family == family)
			match_entry(m, &p->e[i]);
	ret(m, p->default_allow);
}

int egress_prog_build(const struct egress_policy *p, bool v6, struct bpf_insn *insns)
{
	struct emit m = { insns, 0 };
	size_t jump_v6[3], v4_start;

	if (p->n > EGRESS_ENTRIES_MAX)
		return -E2BIG;
	ins(&m, BPF_ALU64 | BPF_MOV | BPF_X, R6, R1, 0, 0);
	ldx_w(&m, R7, CTX(user_port));
	to_host(&m, R7, 16);
	ldx_w(&m, R8, CTX(protocol));
	if (!v6) {
		ldx_w(&m, R9, CTX(user_ip4));
		to_host(&m, R9, 32);
		block(&m, p, NET_AF4);
		return (int)m.n;
	}
	/* ::ffff:a.b.c.d is a connection to a.b.c.d: the IPv4 entries decide. */
	ldx_w(&m, R1, CTX(user_ip6[0]));
	jump_v6[0] = m.n;
	jmp32(&m, BPF_JNE, R1, 0, 0);
	ldx_w(&m, R1, CTX(user_ip6[1]));
	jump_v6[1] = m.n;
	jmp32(&m, BPF_JNE, R1, 0, 0);
	ldx_w(&m, R1, CTX(user_ip6[2]));
	to_host(&m, R1, 32);
	jump_v6[2] = m.n;
	jmp32(&m, BPF_JNE, R1, 0xffff, 0);
	ldx_w(&m, R9, CTX(user_ip6[3]));
	to_host(&m, R9, 32);
	v4_start = m.n;
	block(&m, p, NET_AF4);
	if (m.n - v4_start > INT16_MAX - 8)
		return -E2BIG;
	for (int k = 0; k < 3; k++)
		insns[jump_v6[k]].off = (int16_t)(m.n - jump_v6[k] - 1);
	block(&m, p, NET_AF6);
	return (int)m.n;
}

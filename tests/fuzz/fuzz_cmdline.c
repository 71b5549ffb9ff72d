/*
 * fuzz_cmdline: the kernel command line both ways: kiln-vmm builds it
 * (vmm/boot/cmdline.c, defaults plus user parameters) and kiln-init reads
 * kiln's parameters back out of it (guest-init/sys/params.c, and the
 * network settings in netconf_params.c).
 *
 * Input: [flags][key: 1..16 bytes, NUL-ended][value, NUL-ended][extra
 * parameters text]; everything also parsed raw.
 * Invariants: the builder stays NUL-terminated within CMDLINE_CAP and an
 * overflow sticks; a parameter the builder took (a value without spaces
 * or quotes) is found again, last occurrence winning, and cmdline_has
 * sees its key; param_get returns 1, 0 or -E2BIG, never writes past its
 * buffer, and leaves "" after -E2BIG.
 */
#include <errno.h>

#include "guest-init/sys/netconf.h"
#include "guest-init/sys/params.h"
#include "vmm/boot/cmdline.h"
#include "fuzz.h"

static void check_get(const char *cl, const char *key, size_t outlen)
{
	char out[64];
	int r;

	memset(out, 0x5a, sizeof(out));
	r = param_get(cl, key, out, outlen);
	FUZZ_ASSERT(r == 1 || r == 0 || r == -E2BIG);
	for (size_t i = outlen; i < sizeof(out); i++)
		FUZZ_ASSERT(out[i] == 0x5a);
	if (r == 1)
		FUZZ_ASSERT(memchr(out, 0, outlen));
	if (r == -E2BIG)
		FUZZ_ASSERT(out[0] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char raw[8192];
	static struct cmdline c;
	struct fuzz_in in = { data, size };
	char key[24] = "kiln.", value[4096], got[4096];
	uint8_t fl = take8(&in);
	size_t n, k, klen = 0, vlen = 0;
	const uint8_t *p;
	struct netconf_boot nb;
	int simple;

	n = size < sizeof(raw) ? size : sizeof(raw) - 1;
	memcpy(raw, data, n);
	raw[n] = 0;
	check_get(raw, "kiln.exec", 1 + fl % 63);
	check_get(raw, "", 8);
	netconf_from_cmdline(raw, &nb);

	p = take_bytes(&in, 16, &k);
	while (klen < k && p[klen] && klen < 15)
		klen++;
	memcpy(key + 5, p, klen);
	key[5 + klen] = 0;
	in.p = p + (klen < k ? klen + 1 : k);
	in.n = size - 1 - (size_t)(in.p - (data + 1));
	while (vlen < in.n && in.p[vlen] && vlen < sizeof(value) - 1)
		vlen++;
	memcpy(value, in.p, vlen);
	value[vlen] = 0;
	take_bytes(&in, vlen + 1, &k);

	cmdline_init(&c);
	cmdline_defaults(&c, fl & 1);
	if (fl & 2)
		cmdline_add(&c, "%s=%s", key, "first");
	cmdline_add(&c, "%s=%s", key, value);
	p = take_bytes(&in, in.n, &k);
	if (k)
		cmdline_add(&c, "%.*s", (int)k, (const char *)p);
	FUZZ_ASSERT(c.len < CMDLINE_CAP && c.buf[c.len] == 0 && strlen(c.buf) == c.len);
	if (c.overflow)
		return 0;
	/* A plain key and value come back; later extra text may override it. */
	simple = klen && !strpbrk(key, " \t\n=\"") && !strpbrk(value, " \t\n\"") &&
		!(k && memmem(p, k, key, 5 + klen));
	if (simple) {
		FUZZ_ASSERT(cmdline_has(&c, key));
		FUZZ_ASSERT(param_get(c.buf, key, got, sizeof(got)) == 1);
		FUZZ_ASSERT(!strcmp(got, value));
	}
	check_get(c.buf, key, 1 + fl % 63);
	netconf_from_cmdline(c.buf, &nb);
	return 0;
}

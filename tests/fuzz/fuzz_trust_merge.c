/*
 * fuzz_trust_merge: kiln-init's rewrite of a CA bundle for the egress CA
 * (guest-init/sys/trust_ca.c, trust_bundle_merge): any bundle text, any
 * CA installed before, any CA now.
 *
 * Input: the length of drop (1 byte, 0: none), of pem (1 byte), drop's
 * bytes, pem's, then the bundle (each string cut at its first NUL).
 * Invariants: the output fits trust_bundle_merge_max; with a pem, it ends
 * in the marked block holding it; with pem and drop shaped as
 * certificates are (no '#', no empty line: agent_pem_cert_check), merging
 * the output again
 * gives the same bytes and no copy of pem or drop stands on lines of its
 * own outside the block.
 */
#include "guest-init/sys/trust_ca.h"
#include "fuzz.h"

/* Whether cert (its final '\n' optional) stands on lines of its own in s[0..n). */
static int has_copy(const char *s, size_t n, const char *cert)
{
	size_t k = strlen(cert);

	if (k && cert[k - 1] == '\n')
		k--;
	if (!k)
		return 0;
	for (size_t i = 0; i + k <= n; i++)
		if ((i == 0 || s[i - 1] == '\n') && memcmp(s + i, cert, k) == 0 &&
		    (i + k == n || s[i + k] == '\n'))
			return 1;
	return 0;
}

/* Lines as a PEM certificate's are (agent_pem_cert_check): no '#' (so no
 * marker line), no empty line, not starting with one. */
static int cert_shaped(const char *s)
{
	return !strchr(s, '#') && !strstr(s, "\n\n") && s[0] != '\n';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t dl = (size_t)take_n(&in, 1), pl = (size_t)take_n(&in, 1), n, m, m2, max;
	char *drop, *pem, *bundle, *out, *again, block[512];
	int has_drop = dl != 0;

	if (dl > in.n)
		dl = in.n;
	drop = strndup((const char *)in.p, dl);
	in.p += dl, in.n -= dl;
	if (pl > in.n)
		pl = in.n;
	pem = strndup((const char *)in.p, pl);
	in.p += pl, in.n -= pl;
	n = in.n;
	bundle = malloc(n + 1);
	FUZZ_ASSERT(drop && pem && bundle);
	memcpy(bundle, in.p, n);
	max = trust_bundle_merge_max(n, pem);
	out = malloc(max);
	FUZZ_ASSERT(out);
	m = trust_bundle_merge(bundle, n, has_drop ? drop : NULL, pem, out);
	FUZZ_ASSERT(m <= max);
	if (*pem) {
		size_t pn = strlen(pem);
		int bn = snprintf(block, sizeof(block), "%s\n%s%s%s\n", TRUST_MARK_BEGIN, pem,
				  pem[pn - 1] == '\n' ? "" : "\n", TRUST_MARK_END);

		FUZZ_ASSERT(bn > 0 && (size_t)bn < sizeof(block) && m >= (size_t)bn);
		FUZZ_ASSERT(memcmp(out + m - bn, block, (size_t)bn) == 0);
	}
	if (cert_shaped(pem) && cert_shaped(drop)) {
		size_t outside = *pem ? m -
				(strlen(TRUST_MARK_BEGIN) + strlen(pem) + strlen(TRUST_MARK_END) +
				 2 + (pem[strlen(pem) - 1] != '\n'))
				      : m;

		again = malloc(trust_bundle_merge_max(m, pem));
		FUZZ_ASSERT(again);
		m2 = trust_bundle_merge(out, m, has_drop ? drop : NULL, pem, again);
		FUZZ_ASSERT(m2 == m && memcmp(again, out, m) == 0);
		FUZZ_ASSERT(!has_copy(out, outside, pem));
		FUZZ_ASSERT(!has_drop || !has_copy(out, outside, drop));
		free(again);
	}
	free(out);
	free(bundle);
	free(pem);
	free(drop);
	return 0;
}

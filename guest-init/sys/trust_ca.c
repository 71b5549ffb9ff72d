/* trust_plan_make() and trust_bundle_merge(): see trust_ca.h. */
#include <string.h>

#include "guest-init/sys/trust_ca.h"

/* The bundles in the order they are preferred: an image with two (a
 * Debian one with RHEL's path linked in) is patched in the first. */
const struct trust_path trust_paths[] = {
	{ "/etc/ssl/certs/ca-certificates.crt", TRUST_HAS_DEBIAN_BUNDLE, false },
	{ "/etc/pki/tls/certs/ca-bundle.crt", TRUST_HAS_RHEL_BUNDLE, false },
	{ "/etc/ssl/cert.pem", TRUST_HAS_ALPINE_BUNDLE, false },
	{ "/usr/local/share/ca-certificates", TRUST_HAS_DEBIAN_ANCHORS, true },
	{ "/etc/pki/ca-trust/source/anchors", TRUST_HAS_RHEL_ANCHORS, true },
};
const size_t trust_paths_n = sizeof(trust_paths) / sizeof(trust_paths[0]);

void trust_plan_make(unsigned has, struct trust_plan *p)
{
	bool rw = has & TRUST_ROOT_WRITABLE;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < trust_paths_n && !p->system_bundle; i++)
		if (!trust_paths[i].dir && (has & trust_paths[i].bit))
			p->system_bundle = trust_paths[i].path;
	p->patch_system = rw && p->system_bundle;
	if (!rw)
		return;
	/* update-ca-certificates takes only *.crt from its directory. */
	if (has & TRUST_HAS_DEBIAN_ANCHORS)
		p->anchors[p->anchors_n++] = "/usr/local/share/ca-certificates/kiln-egress.crt";
	if (has & TRUST_HAS_RHEL_ANCHORS)
		p->anchors[p->anchors_n++] = "/etc/pki/ca-trust/source/anchors/kiln-egress.pem";
}

size_t trust_bundle_merge_max(size_t n, const char *pem)
{
	return n + 1 + sizeof(TRUST_MARK_BEGIN) + strlen(pem) + 1 + sizeof(TRUST_MARK_END);
}

/* Whether line (len bytes, its '\n' not counted) is exactly mark. */
static bool is_mark(const char *line, size_t len, const char *mark)
{
	return len == strlen(mark) && memcmp(line, mark, len) == 0;
}

static size_t put(char *out, size_t o, const char *s, size_t n)
{
	memcpy(out + o, s, n);
	return o + n;
}

/*
 * Remove from out[0..o) every copy of the certificate cert that stands on
 * lines of its own (its final '\n' optional in cert). A bundle rebuilt by
 * update-ca-certificates holds the CA from its anchor, outside our block:
 * without this, the next configure would add it a second time. Returns
 * the new length.
 */
static size_t drop_copies(char *out, size_t o, const char *cert)
{
	size_t k = strlen(cert), i = 0;

	if (k && cert[k - 1] == '\n')
		k--;
	if (!k)
		return o;
	while (i + k <= o) {
		const char *nl;

		if (memcmp(out + i, cert, k) == 0 && (i + k == o || out[i + k] == '\n')) {
			size_t cut = k + (i + k < o ? 1 : 0);

			memmove(out + i, out + i + cut, o - i - cut);
			o -= cut;
			/* What stood before may now end a copy (one nested in
			 * another): look again from the line a copy would start on. */
			i = i > k ? i - k : 0;
			while (i && out[i - 1] != '\n')
				i--;
			continue;
		}
		nl = memchr(out + i, '\n', o - i);
		if (!nl)
			break;
		i = (size_t)(nl - out) + 1;
	}
	return o;
}

size_t trust_bundle_merge(const char *bundle, size_t n, const char *drop, const char *pem,
			  char *out)
{
	size_t o = 0, i = 0, pn = strlen(pem);
	bool inside = false;

	while (i < n) {
		const char *nl = memchr(bundle + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (bundle + i)) : n - i;
		size_t next = i + len + (nl ? 1 : 0);

		if (!inside && is_mark(bundle + i, len, TRUST_MARK_BEGIN))
			inside = true;
		else if (inside && is_mark(bundle + i, len, TRUST_MARK_END))
			inside = false;
		else if (!inside)
			o = put(out, o, bundle + i, next - i);
		i = next;
	}
	/* Until neither is left: taking one out can join the other's lines. */
	for (size_t was = o + 1; was != o;) {
		was = o;
		o = drop_copies(out, o, pem);
		if (drop)
			o = drop_copies(out, o, drop);
	}
	if (o && out[o - 1] != '\n')
		out[o++] = '\n';
	if (!pn)
		return o;
	o = put(out, o, TRUST_MARK_BEGIN "\n", sizeof(TRUST_MARK_BEGIN));
	o = put(out, o, pem, pn);
	if (pem[pn - 1] != '\n')
		out[o++] = '\n';
	return put(out, o, TRUST_MARK_END "\n", sizeof(TRUST_MARK_END));
}

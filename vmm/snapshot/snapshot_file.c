#include "vmm/snapshot/snapshot_file.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/base/le.h"
#include "lib/base/mem_grow.h"

/* The file is little endian, and so is every host kiln runs on (x86-64). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "snapshot files are little endian");

/* Header offsets (docs/architecture.md, "Snapshot files"). */
#define H_MAGIC 0
#define H_FORMAT 8
#define H_COUNT 12
#define H_TOTAL 16
#define H_KILN_VERSION 24
#define H_VENDOR 56
#define H_FAMILY 72
#define H_MODEL 76
#define H_FEATURES 80
#define H_RESERVED 88

/* Section header offsets. */
#define S_TYPE 0
#define S_INDEX 4
#define S_NAME 8
#define S_LEN 24

_Static_assert(H_RESERVED + 8 == SNAP_HEADER_SIZE, "header layout");
_Static_assert(S_LEN + 8 == SNAP_SECTION_HEADER_SIZE, "section header layout");

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* A NUL-terminated printable string in a fixed field, zero padded, 1..max chars when nonempty. */
static int field_ok(const uint8_t *f, size_t size, int allow_empty)
{
	size_t n = strnlen((const char *)f, size);

	if (n == size || (n == 0 && !allow_empty))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (f[i] < 0x20 || f[i] > 0x7e)
			return 0;
	for (size_t i = n; i < size; i++)
		if (f[i])
			return 0;
	return 1;
}

/* Section names are identifiers in messages: no spaces either. */
static int name_ok(const char *name)
{
	size_t n = strnlen(name, SNAP_NAME_MAX + 1);

	if (n == 0 || n > SNAP_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] <= 0x20 || name[i] > 0x7e)
			return 0;
	return 1;
}

static int string_ok(const char *s, size_t max, int allow_empty)
{
	size_t n = strnlen(s, max + 1);

	if (n > max || (n == 0 && !allow_empty))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

void snap_cpu_from_cpuid(struct snap_cpu *c, uint32_t ebx0, uint32_t ecx0, uint32_t edx0,
			 uint32_t eax1)
{
	uint32_t base_family = (eax1 >> 8) & 0xf, base_model = (eax1 >> 4) & 0xf;

	memset(c->vendor, 0, sizeof(c->vendor));
	/* Leaf 0 spells the vendor in EBX, EDX, ECX order. */
	memcpy(c->vendor, &ebx0, 4);
	memcpy(c->vendor + 4, &edx0, 4);
	memcpy(c->vendor + 8, &ecx0, 4);
	/* Intel SDM vol. 2A, CPUID leaf 1: the extended fields count only for these families. */
	c->family = base_family == 0xf ? base_family + ((eax1 >> 20) & 0xff) : base_family;
	c->model = base_family == 6 || base_family == 0xf ? (((eax1 >> 16) & 0xf) << 4) | base_model
							  : base_model;
}

uint64_t snap_digest(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---- writing ---- */

static int sticky(struct snap_writer *w, struct err *e)
{
	if (e)
		*e = w->why;
	return w->err;
}

static int wfail(struct snap_writer *w, struct err *e, int code, const char *msg)
{
	w->err = err_set(&w->why, code, "snapshot state: %s", msg);
	return sticky(w, e);
}

/* Room for `n` more bytes, keeping the whole file (with trailer) within SNAP_STATE_MAX. */
static int grow(struct snap_writer *w, size_t n, struct err *e)
{
	size_t need;
	uint8_t *nb;

	if (n > SNAP_STATE_MAX || w->len + n + 8 + SNAP_TRAILER_SIZE > SNAP_STATE_MAX)
		return wfail(w, e, -SNAP_ERR_TOO_BIG,
			     "larger than the 256 MiB a state file may be");
	need = w->len + n;
	if (need <= w->cap)
		return 0;
	nb = mem_grow(w->buf, &w->cap, need, 4096, SNAP_STATE_MAX);
	if (!nb)
		return wfail(w, e, ENOMEM, "out of memory");
	w->buf = nb;
	return 0;
}

int snap_writer_init(struct snap_writer *w, const struct snap_compat *who, struct err *e)
{
	uint8_t *h;

	memset(w, 0, sizeof(*w));
	if (!string_ok(who->kiln_version, SNAP_VERSION_MAX, 0) ||
	    !string_ok(who->cpu.vendor, SNAP_VENDOR_MAX, 1))
		return wfail(w, e, EINVAL,
			     "kiln version or CPU vendor is not a short printable string");
	if (grow(w, SNAP_HEADER_SIZE, e))
		return w->err;
	h = w->buf;
	memset(h, 0, SNAP_HEADER_SIZE);
	memcpy(h + H_MAGIC, SNAP_MAGIC, 8);
	le_put32(h + H_FORMAT, SNAP_FORMAT_VERSION);
	memcpy(h + H_KILN_VERSION, who->kiln_version, strlen(who->kiln_version));
	memcpy(h + H_VENDOR, who->cpu.vendor, strlen(who->cpu.vendor));
	le_put32(h + H_FAMILY, who->cpu.family);
	le_put32(h + H_MODEL, who->cpu.model);
	le_put64(h + H_FEATURES, who->cpu.features);
	w->len = SNAP_HEADER_SIZE;
	return 0;
}

void snap_writer_free(struct snap_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

int snap_begin(struct snap_writer *w, uint32_t type, uint32_t index, const char *name,
	       struct err *e)
{
	uint8_t *s;

	if (w->err)
		return sticky(w, e);
	if (!w->buf || w->finished || w->open)
		return wfail(w, e, EINVAL, "section begun while another is open, or after finish");
	if (type == 0 || !name_ok(name))
		return wfail(w, e, EINVAL,
			     "section type 0 or a name that is not 1-15 printable characters");
	if (w->count >= SNAP_MAX_SECTIONS)
		return wfail(w, e, -SNAP_ERR_TOO_BIG, "more sections than a state file may hold");
	if (grow(w, SNAP_SECTION_HEADER_SIZE, e))
		return w->err;
	s = w->buf + w->len;
	memset(s, 0, SNAP_SECTION_HEADER_SIZE);
	le_put32(s + S_TYPE, type);
	le_put32(s + S_INDEX, index);
	memcpy(s + S_NAME, name, strlen(name));
	w->open = w->len;
	w->len += SNAP_SECTION_HEADER_SIZE;
	return 0;
}

int snap_put(struct snap_writer *w, const void *data, size_t len, struct err *e)
{
	if (w->err)
		return sticky(w, e);
	if (!w->open)
		return wfail(w, e, EINVAL, "payload written outside a section");
	if (len == 0)
		return 0;
	if (grow(w, len, e))
		return w->err;
	memcpy(w->buf + w->len, data, len);
	w->len += len;
	return 0;
}

int snap_put_u8(struct snap_writer *w, uint8_t v, struct err *e)
{
	return snap_put(w, &v, 1, e);
}
int snap_put_u16(struct snap_writer *w, uint16_t v, struct err *e)
{
	return snap_put(w, &v, 2, e);
}
int snap_put_u32(struct snap_writer *w, uint32_t v, struct err *e)
{
	return snap_put(w, &v, 4, e);
}
int snap_put_u64(struct snap_writer *w, uint64_t v, struct err *e)
{
	return snap_put(w, &v, 8, e);
}

int snap_end(struct snap_writer *w, struct err *e)
{
	size_t payload, pad;

	if (w->err)
		return sticky(w, e);
	if (!w->open)
		return wfail(w, e, EINVAL, "section ended that was not begun");
	payload = w->len - w->open - SNAP_SECTION_HEADER_SIZE;
	pad = pad8(payload) - payload;
	if (grow(w, pad, e))
		return w->err;
	memset(w->buf + w->len, 0, pad);
	le_put64(w->buf + w->open + S_LEN, payload);
	w->len += pad;
	w->open = 0;
	w->count++;
	return 0;
}

int snap_add(struct snap_writer *w, uint32_t type, uint32_t index, const char *name,
	     const void *data, size_t len, struct err *e)
{
	if (snap_begin(w, type, index, name, e) || snap_put(w, data, len, e))
		return w->err;
	return snap_end(w, e);
}

int snap_finish(struct snap_writer *w, const uint8_t **out, size_t *out_len, struct err *e)
{
	struct snap_view v;
	int r;

	if (w->err)
		return sticky(w, e);
	if (!w->buf || w->finished || w->open)
		return wfail(w, e, EINVAL, "finished twice, or with a section open");
	if (grow(w, SNAP_TRAILER_SIZE, e))
		return w->err;
	le_put32(w->buf + H_COUNT, w->count);
	le_put64(w->buf + H_TOTAL, w->len + SNAP_TRAILER_SIZE);
	le_put32(w->buf + w->len, (uint32_t)crc32_z(0, w->buf, w->len));
	le_put32(w->buf + w->len + 4, SNAP_END_MAGIC);
	w->len += SNAP_TRAILER_SIZE;
	/* What kiln writes, kiln must read back: duplicates and any slip here fail now, not at restore. */
	r = snap_parse(w->buf, w->len, NULL, &v, &w->why);
	if (r) {
		w->err = r;
		return sticky(w, e);
	}
	snap_view_free(&v);
	w->finished = 1;
	*out = w->buf;
	*out_len = w->len;
	return 0;
}

/* ---- reading ---- */

static int cmp_key(const struct snap_section *a, const struct snap_section *b)
{
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return 0;
}

static int cmp_sorted(const void *pa, const void *pb, void *ctx)
{
	const struct snap_section *s = ctx;

	return cmp_key(&s[*(const uint32_t *)pa], &s[*(const uint32_t *)pb]);
}

/* Walk the sections between header and trailer into v->sections (v->count of them). */
static int parse_sections(const uint8_t *b, uint64_t total, struct snap_view *v, struct err *e)
{
	uint64_t off = SNAP_HEADER_SIZE, end = total - SNAP_TRAILER_SIZE;
	uint32_t i;

	for (i = 0; off < end; i++) {
		const uint8_t *h = b + off;
		struct snap_section *s;
		uint64_t len, room;

		if (i >= v->count)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot state: more sections than the %u its header counts",
				       v->count);
		if (end - off < SNAP_SECTION_HEADER_SIZE)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot state: section %u's header runs past the end", i);
		s = &v->sections[i];
		s->type = le_get32(h + S_TYPE);
		s->index = le_get32(h + S_INDEX);
		len = le_get64(h + S_LEN);
		if (!field_ok(h + S_NAME, SNAP_NAME_MAX + 1, 0) ||
		    !name_ok((const char *)h + S_NAME))
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot state: section %u has a bad name", i);
		memcpy(s->name, h + S_NAME, SNAP_NAME_MAX + 1);
		if (s->type == 0)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot state: section %u '%s' has type 0", i, s->name);
		room = end - off - SNAP_SECTION_HEADER_SIZE;
		/* len <= room < 2^63 before pad8, so the rounding cannot wrap. */
		if (len > room || pad8(len) > room)
			return err_set(
				e, -SNAP_ERR_MALFORMED,
				"snapshot state: section %u '%s' says %llu bytes, only %llu remain",
				i, s->name, (unsigned long long)len, (unsigned long long)room);
		s->data = h + SNAP_SECTION_HEADER_SIZE;
		s->len = len;
		for (uint64_t p = len; p < pad8(len); p++)
			if (s->data[p])
				return err_set(e, -SNAP_ERR_MALFORMED,
					       "snapshot state: section %u '%s' has nonzero padding",
					       i, s->name);
		off += SNAP_SECTION_HEADER_SIZE + pad8(len);
	}
	if (i != v->count)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state: %u sections, its header counts %u", i, v->count);
	return 0;
}

static int check_dups(struct snap_view *v, struct err *e)
{
	for (uint32_t i = 0; i < v->count; i++)
		v->sorted[i] = i;
	qsort_r(v->sorted, v->count, sizeof(*v->sorted), cmp_sorted, v->sections);
	for (uint32_t i = 1; i < v->count; i++) {
		const struct snap_section *a = &v->sections[v->sorted[i - 1]];
		const struct snap_section *b = &v->sections[v->sorted[i]];

		if (!cmp_key(a, b))
			return err_set(e, -SNAP_ERR_DUPLICATE,
				       "snapshot state: two sections of type %u index %u ('%s', '%s')",
				       a->type, a->index, a->name, b->name);
	}
	return 0;
}

int snap_check_compat(const struct snap_compat *origin, const struct snap_compat *host,
		      struct err *e)
{
	const struct snap_cpu *o = &origin->cpu, *h = &host->cpu;

	if (strcmp(origin->kiln_version, host->kiln_version))
		return err_set(
			e, -SNAP_ERR_KILN_VERSION,
			"snapshot was written by kiln %s, this is kiln %s: restore it with kiln %s",
			origin->kiln_version, host->kiln_version, origin->kiln_version);
	if (strcmp(o->vendor, h->vendor))
		return err_set(
			e, -SNAP_ERR_CPU,
			"snapshot was taken on a %s CPU, this host's is %s: restore it on a matching host",
			o->vendor, h->vendor);
	if (o->family != h->family || o->model != h->model)
		return err_set(e, -SNAP_ERR_CPU,
			       "snapshot was taken on CPU family %u model %u, this host is family %u model %u: "
			       "restore it on a matching host",
			       o->family, o->model, h->family, h->model);
	if (o->features != h->features)
		return err_set(e, -SNAP_ERR_CPU,
			       "snapshot's CPU features differ from this host's (digest %016llx, here %016llx): "
			       "restore it on a matching host",
			       (unsigned long long)o->features, (unsigned long long)h->features);
	return 0;
}

int snap_parse(const void *buf, size_t len, const struct snap_compat *host, struct snap_view *v,
	       struct err *e)
{
	const uint8_t *b = buf;
	uint64_t total;
	uint32_t crc;
	int r;

	memset(v, 0, sizeof(*v));
	/* A file cut inside the magic is truncated, not foreign. */
	if (len && memcmp(b, SNAP_MAGIC, len < 8 ? len : 8))
		return err_set(e, -SNAP_ERR_MAGIC,
			       "not a kiln snapshot state file (no KILNSNAP magic)");
	if (len < H_TOTAL + 8)
		return err_set(e, -SNAP_ERR_TRUNCATED, "snapshot state file truncated: %zu bytes",
			       len);
	/*
	 * The magic, format version and total size keep their places in every
	 * format version, so a file from a newer kiln is still measured and
	 * checksummed before its version is judged.
	 */
	total = le_get64(b + H_TOTAL);
	if (total > len)
		return err_set(
			e, -SNAP_ERR_TRUNCATED,
			"snapshot state file truncated (or its header damaged): %zu bytes, header says %llu",
			len, (unsigned long long)total);
	if (total < len || total < SNAP_HEADER_SIZE + SNAP_TRAILER_SIZE || total % 8)
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot state file damaged: %zu bytes, header says %llu", len,
			       (unsigned long long)total);
	if (len > SNAP_STATE_MAX)
		return err_set(e, -SNAP_ERR_TOO_BIG,
			       "snapshot state file is %zu bytes, the limit is %u", len,
			       SNAP_STATE_MAX);
	crc = (uint32_t)crc32_z(0, b, len - SNAP_TRAILER_SIZE);
	if (le_get32(b + len - 8) != crc || le_get32(b + len - 4) != SNAP_END_MAGIC)
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot state file damaged: checksum mismatch");
	v->format_version = le_get32(b + H_FORMAT);
	if (v->format_version != SNAP_FORMAT_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot state file has format version %u, this kiln reads version %u",
			       v->format_version, SNAP_FORMAT_VERSION);

	if (!field_ok(b + H_KILN_VERSION, SNAP_VERSION_MAX + 1, 0) ||
	    !field_ok(b + H_VENDOR, SNAP_VENDOR_MAX + 1, 1) || le_get64(b + H_RESERVED))
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state file has a malformed header");
	memcpy(v->origin.kiln_version, b + H_KILN_VERSION, SNAP_VERSION_MAX + 1);
	memcpy(v->origin.cpu.vendor, b + H_VENDOR, SNAP_VENDOR_MAX + 1);
	v->origin.cpu.family = le_get32(b + H_FAMILY);
	v->origin.cpu.model = le_get32(b + H_MODEL);
	v->origin.cpu.features = le_get64(b + H_FEATURES);

	v->count = le_get32(b + H_COUNT);
	if (v->count > SNAP_MAX_SECTIONS)
		return err_set(e, -SNAP_ERR_TOO_BIG,
			       "snapshot state file has %u sections, the limit is %u", v->count,
			       SNAP_MAX_SECTIONS);
	/* Each section takes at least its header: a count the bytes cannot hold allocates nothing. */
	if ((uint64_t)v->count * SNAP_SECTION_HEADER_SIZE >
	    total - SNAP_HEADER_SIZE - SNAP_TRAILER_SIZE)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state file counts %u sections, its %llu bytes cannot hold them",
			       v->count, (unsigned long long)total);
	v->sections = calloc(v->count ? v->count : 1, sizeof(*v->sections));
	v->sorted = calloc(v->count ? v->count : 1, sizeof(*v->sorted));
	if (!v->sections || !v->sorted) {
		snap_view_free(v);
		return err_set(e, ENOMEM, "snapshot state: out of memory");
	}
	r = parse_sections(b, total, v, e);
	if (!r)
		r = check_dups(v, e);
	if (!r && host)
		r = snap_check_compat(&v->origin, host, e);
	if (r)
		snap_view_free(v);
	return r;
}

void snap_view_free(struct snap_view *v)
{
	free(v->sections);
	free(v->sorted);
	v->sections = NULL;
	v->sorted = NULL;
	v->count = 0;
}

const struct snap_section *snap_find(const struct snap_view *v, uint32_t type, uint32_t index)
{
	struct snap_section key = { .type = type, .index = index };
	uint32_t lo = 0, hi = v->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct snap_section *s = &v->sections[v->sorted[mid]];
		int c = cmp_key(s, &key);

		if (c == 0)
			return s;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void snap_cursor_init(struct snap_cursor *c, const struct snap_section *s)
{
	c->s = s;
	c->off = 0;
	c->bad = 0;
}

void snap_get(struct snap_cursor *c, void *out, size_t len)
{
	if (c->bad || len > c->s->len - c->off) {
		c->bad = 1;
		memset(out, 0, len);
		return;
	}
	memcpy(out, c->s->data + c->off, len);
	c->off += len;
}

uint8_t snap_get_u8(struct snap_cursor *c)
{
	uint8_t v;
	snap_get(c, &v, 1);
	return v;
}

uint16_t snap_get_u16(struct snap_cursor *c)
{
	uint16_t v;
	snap_get(c, &v, 2);
	return v;
}

uint32_t snap_get_u32(struct snap_cursor *c)
{
	uint32_t v;
	snap_get(c, &v, 4);
	return v;
}

uint64_t snap_get_u64(struct snap_cursor *c)
{
	uint64_t v;
	snap_get(c, &v, 8);
	return v;
}

int snap_cursor_end(const struct snap_cursor *c, struct err *e)
{
	if (c->bad)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state: section '%s' (index %u) is too short", c->s->name,
			       c->s->index);
	if (c->off != c->s->len)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state: section '%s' (index %u) has %llu bytes left over",
			       c->s->name, c->s->index, (unsigned long long)(c->s->len - c->off));
	return 0;
}

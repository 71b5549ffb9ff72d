/*
 * agent_tar: the ustar reader and header producer (contract in
 * agent_tar.h). Layout and rules: POSIX.1-2017, pax "ustar Interchange
 * Format" and "pax Extended Header"; GNU tar's `L`/`K` long names and
 * base-256 numbers, which every current tar reads and writes.
 */
#include "api/proto/agent_tar.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ustar header fields: offset and size. */
#define H_NAME 0
#define H_NAME_LEN 100
#define H_MODE 100
#define H_UID 108
#define H_GID 116
#define H_SIZE 124
#define H_MTIME 136
#define H_CHKSUM 148
#define H_TYPE 156
#define H_LINK 157
#define H_LINK_LEN 100
#define H_MAGIC 257
#define H_VERSION 263
#define H_DEVMAJOR 329
#define H_DEVMINOR 337
#define H_PREFIX 345
#define H_PREFIX_LEN 155

/* Largest size an 11-digit octal field holds: 8 GiB - 1. */
#define OCTAL11_MAX 077777777777ULL

enum {
	ST_HEADER, /* collecting a header block */
	ST_DATA,   /* a file's data: DATA events */
	ST_FILE_END,
	ST_PAD,  /* padding after data */
	ST_SKIP, /* data of a member that is not extracted, padding included */
	ST_EXT,  /* collecting pax / GNU long-name data */
	ST_ZERO, /* one zero block seen; the next must be zero too */
	ST_DONE,
	ST_ERROR,
};

static const char *target_name(const struct tar_reader *r)
{
	return r->target ? r->target : "the target directory";
}

/* ---- numbers ---- */

int tar_num_parse(const uint8_t *f, size_t n, bool allow_neg, int64_t *out)
{
	int64_t v = 0;
	size_t i = 0;
	bool digits = false;

	if (!n)
		return -EINVAL;
	if (f[0] & 0x80) {
		/* Base-256 (GNU): the field less its marker bit is a big-endian
		 * two's complement number; bit 6 of the first byte is the sign. */
		bool neg = f[0] & 0x40;

		if (neg && !allow_neg)
			return -EINVAL;
		v = neg ? (int64_t)(f[0] & 0x3f) - 64 : (int64_t)(f[0] & 0x3f);
		for (i = 1; i < n; i++)
			if (__builtin_mul_overflow(v, 256, &v) ||
			    __builtin_add_overflow(v, f[i], &v))
				return -EINVAL;
		*out = v;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		digits = true;
		if (__builtin_mul_overflow(v, 8, &v) || __builtin_add_overflow(v, f[i] - '0', &v))
			return -EINVAL;
	}
	/* Only terminators may follow: "12x" or "1 2" is not a number. */
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -EINVAL;
	*out = digits ? v : 0;
	return 0;
}

/* ---- names ---- */

enum agent_code tar_name_normalize(const char *raw, size_t n, char *out, size_t *out_len, bool *dir,
				   const char *target, struct agent_err *err)
{
	size_t o = 0, p = 0;

	if (!target)
		target = "the target directory";
	*out_len = 0;
	*dir = n && raw[n - 1] == '/';
	if (memchr(raw, '\0', n))
		return agent_err_set(
			err, AGENT_E_BAD_ARCHIVE,
			"tar member '%.200s': the name contains a NUL byte; the archive is corrupt",
			raw);
	if (n && raw[0] == '/')
		return agent_err_set(
			err, AGENT_E_UNSAFE_PATH,
			"tar member '%.*s': absolute name would leave %s; the archive must hold relative paths inside the target",
			(int)(n > 200 ? 200 : n), raw, target);
	while (p < n) {
		size_t s, len;

		while (p < n && raw[p] == '/')
			p++;
		s = p;
		while (p < n && raw[p] != '/')
			p++;
		len = p - s;
		if (!len || (len == 1 && raw[s] == '.'))
			continue;
		if (len == 2 && raw[s] == '.' && raw[s + 1] == '.')
			return agent_err_set(
				err, AGENT_E_UNSAFE_PATH,
				"tar member '%.*s': '..' would leave %s; the archive must hold relative paths inside the target",
				(int)(n > 200 ? 200 : n), raw, target);
		/* Extractors copy a component into a NAME_MAX buffer and the
		 * whole into a PATH_MAX one; a pax or GNU long name is bounded
		 * only by TAR_EXT_MAX, so the limits are enforced here. */
		if (len > NAME_MAX || o + !!o + len > AGENT_PATH_MAX)
			return agent_err_set(
				err, AGENT_E_BAD_ARCHIVE,
				"tar member '%.*s...': the name is too long: at most %d bytes per component and %d in all",
				(int)(n > 200 ? 200 : n), raw, NAME_MAX, AGENT_PATH_MAX);
		if (o)
			out[o++] = '/';
		memcpy(out + o, raw + s, len);
		o += len;
	}
	out[o] = '\0';
	*out_len = o;
	return AGENT_OK;
}

enum agent_code tar_symlink_check(const char *name, size_t name_len, const char *link,
				  size_t link_len, const char *target, struct agent_err *err)
{
	size_t depth = 0, climb = 0, p = 0;
	bool named = false;

	if (!target)
		target = "the target directory";
	if (!link_len || memchr(link, '\0', link_len))
		return agent_err_set(
			err, AGENT_E_BAD_ARCHIVE,
			"tar symlink '%.200s': empty target or a NUL byte in it; the archive is corrupt",
			name);
	if (link[0] == '/')
		return agent_err_set(
			err, AGENT_E_UNSAFE_PATH,
			"tar symlink '%.200s' -> '%.*s': an absolute target points outside %s; use a relative target",
			name, (int)(link_len > 200 ? 200 : link_len), link, target);
	/* The member's own directory is as deep as its name has slashes. */
	for (size_t i = 0; i < name_len; i++)
		depth += name[i] == '/';
	while (p < link_len) {
		size_t s, len;

		while (p < link_len && link[p] == '/')
			p++;
		s = p;
		while (p < link_len && link[p] != '/')
			p++;
		len = p - s;
		if (!len || (len == 1 && link[s] == '.'))
			continue;
		if (!(len == 2 && link[s] == '.' && link[s + 1] == '.')) {
			named = true;
			continue;
		}
		/* After a name, `..` climbs from wherever that name leads,
		 * which may be a symlink; only a leading climb is countable. */
		if (named)
			return agent_err_set(
				err, AGENT_E_UNSAFE_PATH,
				"tar symlink '%.200s' -> '%.*s': '..' after a name could climb out of %s; put every '..' first",
				name, (int)(link_len > 200 ? 200 : link_len), link, target);
		if (++climb > depth)
			return agent_err_set(
				err, AGENT_E_UNSAFE_PATH,
				"tar symlink '%.200s' -> '%.*s': '..' would leave %s; the link must point inside the target",
				name, (int)(link_len > 200 ? 200 : link_len), link, target);
	}
	return AGENT_OK;
}

/* ---- reader ---- */

void tar_reader_init(struct tar_reader *r, const char *target)
{
	memset(r, 0, sizeof(*r));
	r->state = ST_HEADER;
	r->target = target;
}

static void overrides_clear(struct tar_reader *r)
{
	free(r->o_pax_path);
	free(r->o_pax_link);
	free(r->o_gnu_path);
	free(r->o_gnu_link);
	r->o_pax_path = r->o_pax_link = r->o_gnu_path = r->o_gnu_link = NULL;
	r->o_pax_path_len = r->o_pax_link_len = r->o_gnu_path_len = r->o_gnu_link_len = 0;
	r->o_pending = r->o_has_size = r->o_has_mtime = r->o_sparse = false;
}

void tar_reader_free(struct tar_reader *r)
{
	overrides_clear(r);
	free(r->ext);
	free(r->name_buf);
	free(r->link_buf);
	r->ext = NULL;
	r->name_buf = r->link_buf = NULL;
}

static void fail_event(struct tar_reader *r, struct tar_event *ev)
{
	r->state = ST_ERROR;
	ev->kind = TAR_EV_ERROR;
	ev->err = &r->err;
}

__attribute__((format(printf, 4, 5))) static void fail(struct tar_reader *r, struct tar_event *ev,
						       enum agent_code code, const char *fmt, ...)
{
	va_list ap;

	r->err.code = code;
	va_start(ap, fmt);
	vsnprintf(r->err.msg, sizeof(r->err.msg), fmt, ap);
	va_end(ap);
	fail_event(r, ev);
}

static void fail_memory(struct tar_reader *r, struct tar_event *ev)
{
	fail(r, ev, AGENT_E_BUSY, "out of memory while reading the archive; retry later");
}

/* A copy of s[0..n) with a NUL after it, into *dst (freed first). */
static int dup_value(char **dst, size_t *dst_len, const char *s, size_t n)
{
	char *c = malloc(n + 1);

	if (!c)
		return -ENOMEM;
	memcpy(c, s, n);
	c[n] = '\0';
	free(*dst);
	*dst = c;
	*dst_len = n;
	return 0;
}

static int grow(char **buf, size_t *cap, size_t need)
{
	char *nb;

	if (*cap >= need)
		return 0;
	nb = realloc(*buf, need);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = need;
	return 0;
}

/* A decimal pax value: digits only, fits int64. */
static int pax_uint(const char *v, size_t n, uint64_t *out)
{
	int64_t x = 0;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, v[i] - '0', &x))
			return -EINVAL;
	}
	*out = (uint64_t)x;
	return 0;
}

/* A pax time: [-]seconds[.fraction]; the fraction is cut to nanoseconds. */
static int pax_time(const char *v, size_t n, int64_t *sec, uint32_t *nsec)
{
	bool neg = n && v[0] == '-';
	size_t i = neg, dot;
	uint64_t s, frac = 0;
	size_t fd = 0;

	for (dot = i; dot < n && v[dot] != '.'; dot++)
		;
	if (pax_uint(v + i, dot - i, &s) < 0)
		return -EINVAL;
	if (dot < n) {
		for (i = dot + 1; i < n; i++) {
			if (v[i] < '0' || v[i] > '9')
				return -EINVAL;
			if (fd < 9) {
				frac = frac * 10 + (uint64_t)(v[i] - '0');
				fd++;
			}
		}
	}
	for (; fd < 9; fd++)
		frac *= 10;
	*sec = (int64_t)s;
	*nsec = (uint32_t)frac;
	if (neg) {
		*sec = -*sec;
		if (frac) {
			*sec -= 1;
			*nsec = (uint32_t)(1000000000u - frac);
		}
	}
	return 0;
}

/* Parse the pax records in r->ext ("%d %s=%s\n", the length counting
 * itself) into the overrides. 0, or -1 after fail(). */
static int pax_parse(struct tar_reader *r, struct tar_event *ev)
{
	const char *d = (const char *)r->ext;
	size_t n = r->ext_len, p = 0;

	while (p < n) {
		size_t len = 0, i = p, klen, vlen;
		const char *key, *val, *eq;

		while (i < n && d[i] >= '0' && d[i] <= '9' && i - p < 6) {
			len = len * 10 + (size_t)(d[i] - '0');
			i++;
		}
		/* Shortest record: "5 k=\n"; the key starts inside the record. */
		if (i == p || i >= n || d[i] != ' ' || len < 5 || len > n - p ||
		    i + 1 >= p + len - 1 || d[p + len - 1] != '\n') {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "pax header at byte %llu: malformed record at offset %zu; the archive is corrupt",
			     (unsigned long long)r->hdr_offset, p);
			return -1;
		}
		key = d + i + 1;
		eq = memchr(key, '=', (size_t)(d + p + len - 1 - key));
		if (!eq || eq == key) {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "pax header at byte %llu: record without 'key=' at offset %zu; the archive is corrupt",
			     (unsigned long long)r->hdr_offset, p);
			return -1;
		}
		klen = (size_t)(eq - key);
		val = eq + 1;
		vlen = (size_t)(d + p + len - 1 - val);
		p += len;

#define KEY(s) (klen == sizeof(s) - 1 && memcmp(key, s, klen) == 0)
		if (KEY("path") || KEY("linkpath")) {
			bool path = KEY("path");
			char **dst = path ? &r->o_pax_path : &r->o_pax_link;
			size_t *dlen = path ? &r->o_pax_path_len : &r->o_pax_link_len;

			if (memchr(val, '\0', vlen)) {
				fail(r, ev, AGENT_E_BAD_ARCHIVE,
				     "pax header at byte %llu: '%s' contains a NUL byte; the archive is corrupt",
				     (unsigned long long)r->hdr_offset, path ? "path" : "linkpath");
				return -1;
			}
			/* An empty value deletes the override (pax "Extended Header"). */
			if (!vlen) {
				free(*dst);
				*dst = NULL;
				*dlen = 0;
			} else if (dup_value(dst, dlen, val, vlen) < 0) {
				fail_memory(r, ev);
				return -1;
			}
		} else if (KEY("size")) {
			r->o_has_size = vlen != 0;
			if (vlen && pax_uint(val, vlen, &r->o_size) < 0) {
				fail(r, ev, AGENT_E_BAD_ARCHIVE,
				     "pax header at byte %llu: 'size' is not a decimal number; the archive is corrupt",
				     (unsigned long long)r->hdr_offset);
				return -1;
			}
		} else if (KEY("mtime")) {
			r->o_has_mtime = vlen != 0;
			if (vlen && pax_time(val, vlen, &r->o_mtime, &r->o_mtime_nsec) < 0) {
				fail(r, ev, AGENT_E_BAD_ARCHIVE,
				     "pax header at byte %llu: 'mtime' is not a time; the archive is corrupt",
				     (unsigned long long)r->hdr_offset);
				return -1;
			}
		} else if (klen > 11 && memcmp(key, "GNU.sparse.", 11) == 0) {
			/* A pax-format sparse file: its data is a map plus
			 * fragments, not the contents. Skipped like type 'S'. */
			r->o_sparse = true;
		}
#undef KEY
		/* Other keys (uid, uname, atime, vendor keys) do not apply:
		 * ownership is the request's user. */
	}
	return 0;
}

/* Collected extended data is complete: apply it. 0, or -1 after fail(). */
static int ext_done(struct tar_reader *r, struct tar_event *ev)
{
	const char *d = (const char *)r->ext;
	size_t n = r->ext_len;

	r->o_pending = true;
	if (r->ext_type == 'x')
		return pax_parse(r, ev);
	/* GNU 'L'/'K': the name, NUL-terminated (the NUL is counted in size). */
	{
		const char *nul = memchr(d, '\0', n);
		size_t len = nul ? (size_t)(nul - d) : n;
		bool link = r->ext_type == 'K';

		if (!len) {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "GNU long-%s header at byte %llu is empty; the archive is corrupt",
			     link ? "link" : "name", (unsigned long long)r->hdr_offset);
			return -1;
		}
		if (dup_value(link ? &r->o_gnu_link : &r->o_gnu_path,
			      link ? &r->o_gnu_link_len : &r->o_gnu_path_len, d, len) < 0) {
			fail_memory(r, ev);
			return -1;
		}
	}
	return 0;
}

static bool block_is_zero(const uint8_t *b)
{
	for (size_t i = 0; i < TAR_BLOCK; i++)
		if (b[i])
			return false;
	return true;
}

static size_t field_len(const uint8_t *f, size_t max)
{
	const uint8_t *nul = memchr(f, '\0', max);

	return nul ? (size_t)(nul - f) : max;
}

/* The header's checksum against both sums tar writers have used (bytes
 * as unsigned and, historically, as signed char). */
static bool checksum_ok(const uint8_t *h)
{
	int64_t stored;
	long us = 0, ss = 0;

	if (tar_num_parse(h + H_CHKSUM, 8, false, &stored) < 0)
		return false;
	for (size_t i = 0; i < TAR_BLOCK; i++) {
		uint8_t b = (i >= H_CHKSUM && i < H_CHKSUM + 8) ? ' ' : h[i];

		us += b;
		ss += (signed char)b;
	}
	return stored == us || stored == ss;
}

/* Begin skipping `size` data bytes plus their padding. */
static void skip_data(struct tar_reader *r, uint64_t size)
{
	r->left = size + tar_pad(size);
	r->pad = 0;
	r->state = r->left ? ST_SKIP : ST_HEADER;
}

/*
 * A complete header block is in r->blk. Returns 1 with an event to
 * report, 0 to go on reading (extended header, zero block, skipped data).
 */
static int header(struct tar_reader *r, struct tar_event *ev)
{
	const uint8_t *h = r->blk;
	bool posix, dir;
	char type = (char)h[H_TYPE];
	int64_t size, mode, mtime;
	char ustar_name[H_PREFIX_LEN + 1 + H_NAME_LEN + 1];
	const char *raw;
	size_t raw_len, len;
	struct tar_member *m = &r->m;
	enum tar_kind kind;
	uint64_t off = r->hdr_offset;

	r->blk_len = 0;
	if (block_is_zero(h)) {
		if (r->o_pending) {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "archive ends (zero block at byte %llu) after an extended header without its member; the archive is corrupt",
			     (unsigned long long)off);
			return 1;
		}
		r->state = ST_ZERO;
		return 0;
	}
	if (!checksum_ok(h)) {
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "tar header at byte %llu: checksum mismatch; the archive is corrupt or not a tar file",
		     (unsigned long long)off);
		return 1;
	}
	posix = memcmp(h + H_MAGIC, "ustar\0", 6) == 0;
	if (!posix && memcmp(h + H_MAGIC, "ustar ", 6) != 0) {
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "tar header at byte %llu: no ustar magic; send a POSIX (ustar/pax) or GNU tar archive",
		     (unsigned long long)off);
		return 1;
	}
	if (tar_num_parse(h + H_SIZE, 12, false, &size) < 0) {
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "tar header at byte %llu: the size field is not a number; the archive is corrupt",
		     (unsigned long long)off);
		return 1;
	}

	switch (type) {
	case 'x':
	case 'L':
	case 'K':
		if ((uint64_t)size > TAR_EXT_MAX || (type != 'x' && !size)) {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "%s header at byte %llu holds %lld bytes; at most %u are accepted",
			     type == 'x' ? "pax" : "GNU long-name", (unsigned long long)off,
			     (long long)size, TAR_EXT_MAX);
			return 1;
		}
		free(r->ext);
		r->ext = malloc(size ? (size_t)size : 1);
		if (!r->ext) {
			fail_memory(r, ev);
			return 1;
		}
		r->ext_type = type;
		r->ext_len = 0;
		r->left = (uint64_t)size;
		r->pad = tar_pad((uint64_t)size);
		r->state = ST_EXT;
		if (!size) {
			if (ext_done(r, ev) < 0)
				return 1;
			r->state = ST_HEADER;
		}
		return 0;
	case 'g':
		/* Global pax headers are ignored (section 7.5). */
		skip_data(r, (uint64_t)size);
		return 0;
	default:
		break;
	}

	if (r->o_has_size)
		size = (int64_t)r->o_size;
	switch (type) {
	case '0':
	case '\0':
	case '7':
		kind = TAR_FILE;
		break;
	case '5':
		kind = TAR_DIR;
		break;
	case '2':
		kind = TAR_SYMLINK;
		break;
	case '1':
		kind = TAR_HARDLINK;
		break;
	case '3':
	case '4':
	case '6':
		/* Devices and FIFOs: no data follows, whatever size says. */
		overrides_clear(r);
		r->state = ST_HEADER;
		ev->kind = TAR_EV_SKIPPED;
		return 1;
	default:
		overrides_clear(r);
		skip_data(r, (uint64_t)size);
		ev->kind = TAR_EV_SKIPPED;
		return 1;
	}
	if (kind == TAR_FILE && r->o_sparse) {
		overrides_clear(r);
		skip_data(r, (uint64_t)size);
		ev->kind = TAR_EV_SKIPPED;
		return 1;
	}

	/* The name: pax path, else GNU long name, else prefix + name. */
	if (r->o_pax_path) {
		raw = r->o_pax_path;
		raw_len = r->o_pax_path_len;
	} else if (r->o_gnu_path) {
		raw = r->o_gnu_path;
		raw_len = r->o_gnu_path_len;
	} else {
		size_t nl = field_len(h + H_NAME, H_NAME_LEN);
		size_t pl = posix ? field_len(h + H_PREFIX, H_PREFIX_LEN) : 0;

		raw_len = 0;
		if (pl) {
			memcpy(ustar_name, h + H_PREFIX, pl);
			ustar_name[pl] = '/';
			raw_len = pl + 1;
		}
		memcpy(ustar_name + raw_len, h + H_NAME, nl);
		raw_len += nl;
		ustar_name[raw_len] = '\0';
		raw = ustar_name;
	}
	if (grow(&r->name_buf, &r->name_cap, raw_len + 1) < 0) {
		fail_memory(r, ev);
		return 1;
	}
	if (tar_name_normalize(raw, raw_len, r->name_buf, &len, &dir, r->target, &r->err) !=
	    AGENT_OK) {
		fail_event(r, ev);
		return 1;
	}
	/* Old tars mark directories only by a trailing '/' on a file. */
	if (kind == TAR_FILE && dir)
		kind = TAR_DIR;
	if (kind != TAR_FILE && size) {
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "tar member '%.200s' (byte %llu): a directory or link with a size of %lld; the archive is corrupt",
		     r->name_buf, (unsigned long long)off, (long long)size);
		return 1;
	}
	if (tar_num_parse(h + H_MODE, 8, false, &mode) < 0 ||
	    tar_num_parse(h + H_MTIME, 12, true, &mtime) < 0) {
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "tar member '%.200s' (byte %llu): the mode or mtime field is not a number; the archive is corrupt",
		     r->name_buf, (unsigned long long)off);
		return 1;
	}

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->name = r->name_buf;
	m->name_len = len;
	m->size = kind == TAR_FILE ? (uint64_t)size : 0;
	m->mode = (uint32_t)mode & 07777;
	m->mtime = r->o_has_mtime ? r->o_mtime : mtime;
	m->mtime_nsec = r->o_has_mtime ? r->o_mtime_nsec : 0;

	if (kind == TAR_SYMLINK || kind == TAR_HARDLINK) {
		const char *lraw;
		size_t lraw_len;

		if (r->o_pax_link) {
			lraw = r->o_pax_link;
			lraw_len = r->o_pax_link_len;
		} else if (r->o_gnu_link) {
			lraw = r->o_gnu_link;
			lraw_len = r->o_gnu_link_len;
		} else {
			lraw = (const char *)h + H_LINK;
			lraw_len = field_len(h + H_LINK, H_LINK_LEN);
		}
		if (grow(&r->link_buf, &r->link_cap, lraw_len + 1) < 0) {
			fail_memory(r, ev);
			return 1;
		}
		if (kind == TAR_SYMLINK) {
			if (len &&
			    tar_symlink_check(r->name_buf, len, lraw, lraw_len, r->target,
					      &r->err) != AGENT_OK) {
				fail_event(r, ev);
				return 1;
			}
			memcpy(r->link_buf, lraw, lraw_len);
			r->link_buf[lraw_len] = '\0';
			m->link_len = lraw_len;
		} else {
			bool ldir;

			if (tar_name_normalize(lraw, lraw_len, r->link_buf, &m->link_len, &ldir,
					       r->target, &r->err) != AGENT_OK) {
				fail_event(r, ev);
				return 1;
			}
			if (len && !m->link_len) {
				fail(r, ev, AGENT_E_UNSAFE_PATH,
				     "tar hard link '%.200s' names %s itself; a hard link must name a file inside it",
				     r->name_buf, target_name(r));
				return 1;
			}
		}
		m->link = r->link_buf;
	}
	overrides_clear(r);

	if (!len) {
		/* "./" and the like: the target itself, which exists. */
		skip_data(r, m->size);
		return 0;
	}
	if (kind == TAR_FILE) {
		r->left = m->size;
		r->pad = tar_pad(m->size);
		r->state = m->size ? ST_DATA : ST_FILE_END;
	} else {
		r->state = ST_HEADER;
	}
	ev->kind = TAR_EV_MEMBER;
	ev->member = m;
	return 1;
}

size_t tar_reader_feed(struct tar_reader *r, const void *buf, size_t n, struct tar_event *ev)
{
	const uint8_t *p = buf;
	size_t used = 0;

	memset(ev, 0, sizeof(*ev));
	for (;;) {
		size_t avail = n - used, take;

		switch (r->state) {
		case ST_ERROR:
			ev->kind = TAR_EV_ERROR;
			ev->err = &r->err;
			return used;
		case ST_DONE:
			/* Bytes after the end-of-archive blocks are ignored. */
			r->offset += avail;
			ev->kind = TAR_EV_NEED_MORE;
			return n;
		case ST_FILE_END:
			r->state = r->pad ? ST_PAD : ST_HEADER;
			ev->kind = TAR_EV_FILE_END;
			ev->member = &r->m;
			return used;
		default:
			break;
		}
		if (!avail) {
			ev->kind = TAR_EV_NEED_MORE;
			return used;
		}
		switch (r->state) {
		case ST_DATA:
			take = avail < r->left ? avail : (size_t)r->left;
			r->left -= take;
			r->offset += take;
			ev->kind = TAR_EV_DATA;
			ev->member = &r->m;
			ev->data = p + used;
			ev->data_len = take;
			if (!r->left)
				r->state = ST_FILE_END;
			return used + take;
		case ST_PAD:
			take = avail < r->pad ? avail : r->pad;
			r->pad -= take;
			break;
		case ST_SKIP:
			take = avail < r->left ? avail : (size_t)r->left;
			r->left -= take;
			if (!r->left)
				r->state = ST_HEADER;
			break;
		case ST_EXT:
			take = avail < r->left ? avail : (size_t)r->left;
			memcpy(r->ext + r->ext_len, p + used, take);
			r->ext_len += take;
			r->left -= take;
			break;
		default: /* ST_HEADER, ST_ZERO: a block */
			if (!r->blk_len)
				r->hdr_offset = r->offset;
			take = TAR_BLOCK - r->blk_len < avail ? TAR_BLOCK - r->blk_len : avail;
			memcpy(r->blk + r->blk_len, p + used, take);
			r->blk_len += take;
			break;
		}
		used += take;
		r->offset += take;

		if (r->state == ST_PAD && !r->pad) {
			r->state = ST_HEADER;
		} else if (r->state == ST_EXT && !r->left) {
			if (ext_done(r, ev) < 0)
				return used;
			r->state = r->pad ? ST_PAD : ST_HEADER;
		} else if (r->state == ST_ZERO && r->blk_len == TAR_BLOCK) {
			r->blk_len = 0;
			if (!block_is_zero(r->blk)) {
				fail(r, ev, AGENT_E_BAD_ARCHIVE,
				     "tar header at byte %llu follows a lone zero block; the archive is corrupt",
				     (unsigned long long)r->hdr_offset);
				return used;
			}
			r->state = ST_DONE;
			ev->kind = TAR_EV_END;
			return used;
		} else if (r->state == ST_HEADER && r->blk_len == TAR_BLOCK) {
			if (header(r, ev))
				return used;
		}
	}
}

void tar_reader_finish(struct tar_reader *r, struct tar_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	switch (r->state) {
	case ST_ERROR:
		fail_event(r, ev);
		return;
	case ST_DONE:
		ev->kind = TAR_EV_END;
		return;
	case ST_HEADER:
	case ST_ZERO:
		if (!r->blk_len && !r->o_pending) {
			r->state = ST_DONE;
			ev->kind = TAR_EV_END;
			return;
		}
		if (r->blk_len) {
			fail(r, ev, AGENT_E_BAD_ARCHIVE,
			     "archive cut off inside a header block (%zu of %d bytes at byte %llu); send the whole archive",
			     r->blk_len, TAR_BLOCK, (unsigned long long)r->hdr_offset);
			return;
		}
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "archive ends after an extended header without its member; send the whole archive");
		return;
	case ST_DATA:
	case ST_FILE_END:
	case ST_PAD:
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "archive cut off inside member '%.200s' (%llu data bytes missing); send the whole archive",
		     r->m.name ? r->m.name : "", (unsigned long long)(r->left + r->pad));
		return;
	default:
		fail(r, ev, AGENT_E_BAD_ARCHIVE,
		     "archive cut off inside a member at byte %llu; send the whole archive",
		     (unsigned long long)r->offset);
		return;
	}
}

/* ---- producer ---- */

static bool octal_fits(uint64_t v, size_t field)
{
	/* field - 1 digits and a NUL. */
	return (field - 1) * 3 >= 64 || v < (1ULL << ((field - 1) * 3));
}

static void put_octal(uint8_t *f, size_t field, uint64_t v)
{
	for (size_t i = field - 1; i-- > 0;) {
		f[i] = (uint8_t)('0' + (v & 7));
		v >>= 3;
	}
	f[field - 1] = '\0';
}

/* Octal when it fits, GNU base-256 otherwise (and for negative times). */
static void put_num(uint8_t *f, size_t field, int64_t v)
{
	uint64_t u = (uint64_t)v;

	if (v >= 0 && octal_fits(u, field)) {
		put_octal(f, field, u);
		return;
	}
	for (size_t i = field; i-- > 0;) {
		f[i] = (uint8_t)(u & 0xff);
		u = v < 0 ? (u >> 8) | (0xffULL << 56) : u >> 8;
	}
	f[0] |= 0x80;
}

static size_t dec_digits(size_t v)
{
	size_t d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Length of the record "%d key=value\n", its own digits included. */
static size_t pax_len(size_t klen, size_t vlen)
{
	size_t base = 1 + klen + 1 + vlen + 1;
	size_t d = dec_digits(base);

	if (dec_digits(base + d) > d)
		d++;
	return base + d;
}

static size_t pax_put(uint8_t *out, const char *key, const char *val, size_t vlen)
{
	size_t klen = strlen(key), len = pax_len(klen, vlen);
	int w = snprintf((char *)out, 32, "%zu ", len);

	memcpy(out + w, key, klen);
	out[w + klen] = '=';
	memcpy(out + w + klen + 1, val, vlen);
	out[len - 1] = '\n';
	return len;
}

static void put_checksum(uint8_t *h)
{
	unsigned sum = 0;

	memset(h + H_CHKSUM, ' ', 8);
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	/* Six digits, NUL, space: what every tar writes. */
	put_octal(h + H_CHKSUM, 7, sum);
	h[H_CHKSUM + 7] = ' ';
}

static void ustar_fill(uint8_t *h, const char *name, size_t nlen, const char *prefix, size_t plen,
		       char type, const char *link, size_t llen, uint64_t size, uint32_t mode,
		       uint32_t uid, uint32_t gid, int64_t mtime)
{
	memset(h, 0, TAR_BLOCK);
	memcpy(h + H_NAME, name, nlen < H_NAME_LEN ? nlen : H_NAME_LEN);
	put_octal(h + H_MODE, 8, mode & 07777);
	put_num(h + H_UID, 8, uid);
	put_num(h + H_GID, 8, gid);
	put_num(h + H_SIZE, 12, (int64_t)size);
	put_num(h + H_MTIME, 12, mtime);
	h[H_TYPE] = (uint8_t)type;
	if (link)
		memcpy(h + H_LINK, link, llen < H_LINK_LEN ? llen : H_LINK_LEN);
	memcpy(h + H_MAGIC, "ustar\0", 6);
	memcpy(h + H_VERSION, "00", 2);
	put_octal(h + H_DEVMAJOR, 8, 0);
	put_octal(h + H_DEVMINOR, 8, 0);
	if (prefix)
		memcpy(h + H_PREFIX, prefix, plen);
	put_checksum(h);
}

ssize_t tar_header_build(const struct tar_out *m, uint8_t *out, size_t cap)
{
	size_t split = 0, paxlen = 0, total;
	bool fits = m->name_len <= H_NAME_LEN, need_link, need_size;
	char sizebuf[24];
	int sizelen = 0;
	uint8_t *h;

	if (!m->name_len)
		return -EINVAL;
	if (m->name_len > AGENT_PATH_MAX + 1 || m->link_len > AGENT_PATH_MAX)
		return -ENAMETOOLONG;
	if (!fits) {
		/* ustar: prefix (<= 155) '/' name (1..100), split at a slash. */
		size_t i = m->name_len > H_NAME_LEN + 1 ? m->name_len - H_NAME_LEN - 1 : 1;

		for (; i <= H_PREFIX_LEN && i + 1 < m->name_len; i++)
			if (m->name[i] == '/') {
				split = i;
				fits = true;
				break;
			}
	}
	need_link = m->link && m->link_len > H_LINK_LEN;
	need_size = m->size > OCTAL11_MAX;
	if (!fits)
		paxlen += pax_len(4, m->name_len);
	if (need_link)
		paxlen += pax_len(8, m->link_len);
	if (need_size) {
		sizelen = snprintf(sizebuf, sizeof(sizebuf), "%llu", (unsigned long long)m->size);
		paxlen += pax_len(4, (size_t)sizelen);
	}
	total = TAR_BLOCK + (paxlen ? TAR_BLOCK + paxlen + tar_pad(paxlen) : 0);
	if (total > cap)
		return -ENOSPC;

	h = out;
	if (paxlen) {
		uint8_t *d = out + TAR_BLOCK;
		size_t o = 0;

		if (!fits)
			o += pax_put(d + o, "path", m->name, m->name_len);
		if (need_link)
			o += pax_put(d + o, "linkpath", m->link, m->link_len);
		if (need_size)
			o += pax_put(d + o, "size", sizebuf, (size_t)sizelen);
		memset(d + o, 0, tar_pad(paxlen));
		ustar_fill(out, "././@PaxHeader", 14, NULL, 0, 'x', NULL, 0, paxlen, 0644, 0, 0,
			   m->mtime);
		h = d + paxlen + tar_pad(paxlen);
	}
	if (split)
		ustar_fill(h, m->name + split + 1, m->name_len - split - 1, m->name, split, m->type,
			   m->link, m->link_len, m->size, m->mode, m->uid, m->gid, m->mtime);
	else
		ustar_fill(h, m->name, m->name_len, NULL, 0, m->type, m->link, m->link_len, m->size,
			   m->mode, m->uid, m->gid, m->mtime);
	return (ssize_t)total;
}

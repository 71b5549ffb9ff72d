/* build_context: see build_context.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/images/build_context.h"
#include "api/proto/gz_stream.h"
#include "lib/base/fd_io.h"

/* ---- one pass over the archive ---- */

typedef int (*ctx_event_fn)(void *arg, const struct tar_event *ev);

struct walk {
	struct tar_reader r;
	ctx_event_fn fn;
	void *arg;
	bool ended;
	uint64_t inflated, max; /* tar bytes decompressed so far; the cap */
	char cur[256];          /* the member being read, for messages */
	struct api_err *e;
};

static int feed(void *arg, const void *data, size_t n)
{
	struct walk *w = arg;
	const uint8_t *p = data;

	/* A gzip bomb is refused, not inflated: the decompressed tar is
	 * capped like the compressed body (--max-image). */
	w->inflated += n;
	if (w->inflated > w->max) {
		api_err_set(w->e, API_E_BAD_ARCHIVE,
			    "build context: it inflates to more than %llu bytes (--max-image), at member '%.200s': send a smaller context",
			    (unsigned long long)w->max, w->cur[0] ? w->cur : "(the first)");
		return -EFBIG;
	}
	while (!w->ended) {
		struct tar_event ev;
		size_t used = tar_reader_feed(&w->r, p, n, &ev);
		int r;

		p += used;
		n -= used;
		if (ev.kind == TAR_EV_NEED_MORE)
			return 0;
		if (ev.kind == TAR_EV_ERROR) {
			api_err_set(w->e, API_E_BAD_ARCHIVE, "build context: %s", ev.err->msg);
			return -EBADMSG;
		}
		if (ev.kind == TAR_EV_END) {
			w->ended = true;
			return 0;
		}
		if (ev.kind == TAR_EV_MEMBER)
			snprintf(w->cur, sizeof(w->cur), "%s", ev.member->name);
		if ((r = w->fn(w->arg, &ev)) < 0)
			return r;
	}
	return 0;
}

static int walk(int fd, uint64_t max, ctx_event_fn fn, void *arg, struct api_err *e)
{
	struct walk w = { .fn = fn, .arg = arg, .max = max, .e = e };
	struct gz_stream g;
	struct tar_event ev;
	static const size_t bufsz = 64u << 10;
	char *buf = malloc(bufsz);
	int r = 0;

	e->code = API_OK;
	if (!buf || gz_dec_init(&g)) {
		free(buf);
		api_err_set(e, API_E_INTERNAL, "build context: out of memory");
		return -1;
	}
	tar_reader_init(&w.r, "the build context");
	if (lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	while (r == 0) {
		ssize_t n = read(fd, buf, bufsz);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : gz_dec_finish(&g);
			break;
		}
		r = gz_dec_write(&g, buf, (size_t)n, feed, &w);
	}
	if (r == 0 && !w.ended) {
		tar_reader_finish(&w.r, &ev);
		if (ev.kind == TAR_EV_ERROR) {
			api_err_set(e, API_E_BAD_ARCHIVE, "build context: %s", ev.err->msg);
			r = -EBADMSG;
		}
	}
	if (r && e->code == API_OK) {
		if (r == -EBADMSG)
			api_err_set(e, API_E_BAD_ARCHIVE,
				    "build context: not a whole tar.gz archive (%s)", gz_why(&g));
		else
			api_err_set(e, API_E_IO_ERROR, "build context: reading it: %s",
				    strerror(-r));
	}
	gz_end(&g);
	tar_reader_free(&w.r);
	free(buf);
	return r ? -1 : 0;
}

/* ---- scan ---- */

struct scan {
	struct build_context *c;
	const char *file;
	struct sha256_ctx h;
	bool open;   /* a member's digest is being computed */
	int want;    /* collecting the build file: 0 no, 1 file=, 2 Kilnfile, 3 Dockerfile */
	char *bf[4]; /* candidates by `want` */
	size_t bf_len[4];
	bool too_big;
	struct api_err *e;
};

static void hash_u64(struct sha256_ctx *h, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	sha256_update(h, sizeof(b), b);
}

static void close_member(struct scan *s)
{
	if (s->open)
		sha256_digest(&s->h, SHA256_DIGEST_SIZE, s->c->m[s->c->n - 1].digest);
	s->open = false;
	s->want = 0;
}

static int scan_event(void *arg, const struct tar_event *ev)
{
	struct scan *s = arg;
	struct build_context *c = s->c;

	if (ev->kind == TAR_EV_MEMBER) {
		const struct tar_member *m = ev->member;

		close_member(s);
		if (c->n == CONTEXT_MEMBERS_MAX) {
			api_err_set(s->e, API_E_BAD_ARCHIVE,
				    "build context: more than %d members (at '%.200s')",
				    CONTEXT_MEMBERS_MAX, m->name);
			return -E2BIG;
		}
		if (!(c->m[c->n].name = strdup(m->name))) {
			api_err_set(s->e, API_E_INTERNAL, "build context: out of memory");
			return -ENOMEM;
		}
		c->m[c->n].kind = m->kind;
		c->n++;
		sha256_init(&s->h);
		hash_u64(&s->h, m->kind);
		hash_u64(&s->h, m->mode);
		hash_u64(&s->h, m->link_len);
		if (m->link)
			sha256_update(&s->h, m->link_len, (const uint8_t *)m->link);
		s->open = true;
		if (m->kind == TAR_FILE) {
			if (s->file && strcmp(m->name, s->file) == 0)
				s->want = 1;
			else if (!s->file && strcmp(m->name, "Kilnfile") == 0)
				s->want = 2;
			else if (!s->file && strcmp(m->name, "Dockerfile") == 0)
				s->want = 3;
			if (s->want) {
				free(s->bf[s->want]);
				s->bf[s->want] = NULL;
				s->bf_len[s->want] = 0;
				if (m->size > BUILDFILE_MAX) {
					s->too_big = true;
					s->want = 0;
				} else if (!(s->bf[s->want] = malloc(m->size + 1))) {
					api_err_set(s->e, API_E_INTERNAL,
						    "build context: out of memory");
					return -ENOMEM;
				}
			}
		}
	} else if (ev->kind == TAR_EV_DATA) {
		sha256_update(&s->h, ev->data_len, (const uint8_t *)ev->data);
		if (s->want && s->bf[s->want]) {
			memcpy(s->bf[s->want] + s->bf_len[s->want], ev->data, ev->data_len);
			s->bf_len[s->want] += ev->data_len;
		}
	} else if (ev->kind == TAR_EV_FILE_END) {
		close_member(s);
	}
	return 0;
}

int build_context_scan(int fd, const char *file, uint64_t max_bytes, struct build_context *c,
		       struct api_err *e)
{
	struct scan s = { .c = c, .file = file, .e = e };
	int r;

	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes;
	if (file) {
		while (file[0] == '.' && file[1] == '/')
			file += 2;
		s.file = file;
	}
	c->m = calloc(CONTEXT_MEMBERS_MAX, sizeof(*c->m));
	if (!c->m) {
		api_err_set(e, API_E_INTERNAL, "build context: out of memory");
		return -1;
	}
	r = walk(fd, c->max_bytes, scan_event, &s, e);
	close_member(&s);
	for (int i = 1; i <= 3 && r == 0 && !c->buildfile; i++)
		if (s.bf[i]) {
			c->buildfile = s.bf[i];
			c->buildfile_len = s.bf_len[i];
			c->buildfile[c->buildfile_len] = '\0';
			s.bf[i] = NULL;
		}
	for (int i = 0; i < 4; i++)
		free(s.bf[i]);
	if (r == 0 && !c->buildfile) {
		if (s.too_big)
			api_err_set(e, API_E_BAD_FIELD,
				    "build context: the build file is larger than %u bytes",
				    BUILDFILE_MAX);
		else if (file)
			api_err_set(e, API_E_BAD_FIELD,
				    "build context: no regular file '%.200s' in it (?file=)", file);
		else
			api_err_set(
				e, API_E_BAD_FIELD,
				"build context: it has no Kilnfile or Dockerfile at its top; name the build file with ?file=PATH");
		r = -1;
	}
	if (r) {
		build_context_free(c);
		return -1;
	}
	return 0;
}

void build_context_free(struct build_context *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->m[i].name);
	free(c->m);
	free(c->buildfile);
	memset(c, 0, sizeof(*c));
}

/* ---- COPY ---- */

static bool member_copied(const struct bf_step *s, const char *name, size_t *src)
{
	const char *rel;

	for (size_t i = s->nsrc; i-- > 0;)
		if (buildfile_copy_match(s->src[i], name, &rel)) {
			*src = i;
			return true;
		}
	return false;
}

int build_context_copy_digest(const struct build_context *c, const struct bf_step *s,
			      char out[DIGEST_STR_LEN], struct api_err *e)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&h);
	for (size_t k = 0; k < s->nsrc; k++) {
		bool any = false;
		const char *rel;

		for (size_t i = 0; i < c->n; i++)
			if (buildfile_copy_match(s->src[k], c->m[i].name, &rel)) {
				/* refused here, before anything boots, not at COPY time */
				if (c->m[i].kind == TAR_HARDLINK) {
					api_err_set(e, API_E_BAD_ARCHIVE,
						    "build file line %u: COPY: '%.200s' is a hard link; give the file itself in the context",
						    s->line, c->m[i].name);
					return -1;
				}
				any = true;
				hash_u64(&h, strlen(c->m[i].name));
				sha256_update(&h, strlen(c->m[i].name),
					      (const uint8_t *)c->m[i].name);
				sha256_update(&h, SHA256_DIGEST_SIZE, c->m[i].digest);
			}
		if (!any) {
			api_err_set(e, API_E_BAD_FIELD,
				    "build file line %u: COPY: '%.200s' is not in the build context",
				    s->line, s->src[k]);
			return -1;
		}
	}
	sha256_digest(&h, SHA256_DIGEST_SIZE, d);
	digest_str(d, out);
	return 0;
}

struct copy {
	const struct bf_step *s;
	int out;
	const char *file_as; /* one file copied to this name, or NULL */
	const char *target;  /* the guest directory it goes into */
	bool copying;        /* the current member's data goes out */
	uint64_t size;
	uint64_t written, max; /* bytes of the re-pack so far; the cap */
	struct api_err *e;
};

static int put(struct copy *cp, const void *p, size_t n)
{
	int r;

	cp->written += n;
	if (cp->written > cp->max) {
		api_err_set(cp->e, API_E_BAD_ARCHIVE,
			    "build file line %u: COPY: what it copies is more than %llu bytes (--max-image): copy less",
			    cp->s->line, (unsigned long long)cp->max);
		return -EFBIG;
	}
	r = fd_io_write_all(cp->out, p, n);

	if (r)
		api_err_set(cp->e, API_E_IO_ERROR, "COPY: writing its archive: %s", strerror(-r));
	return r;
}

static int copy_event(void *arg, const struct tar_event *ev)
{
	static const uint8_t zero[TAR_BLOCK];
	struct copy *cp = arg;
	const struct tar_member *m;
	uint8_t hdr[TAR_HEADER_BUILD_MAX];
	char name[AGENT_PATH_MAX + 2];
	struct tar_out o = { 0 };
	const char *rel;
	size_t src;
	ssize_t hl;

	if (ev->kind == TAR_EV_DATA)
		return cp->copying ? put(cp, ev->data, ev->data_len) : 0;
	if (ev->kind == TAR_EV_FILE_END) {
		int r = cp->copying ? put(cp, zero, tar_pad(cp->size)) : 0;

		cp->copying = false;
		return r;
	}
	if (ev->kind != TAR_EV_MEMBER)
		return 0;
	m = ev->member;
	cp->copying = false;
	if (!member_copied(cp->s, m->name, &src))
		return 0;
	buildfile_copy_match(cp->s->src[src], m->name, &rel);
	if (strcmp(m->name, cp->s->src[src]) == 0 && strcmp(cp->s->src[src], ".") != 0) {
		if (m->kind == TAR_DIR)
			return 0; /* a directory source: its contents go into the destination */
		if (cp->file_as)
			rel = cp->file_as;
	}
	if (!rel[0])
		return 0;
	if (m->kind == TAR_HARDLINK) {
		api_err_set(cp->e, API_E_BAD_ARCHIVE,
			    "build file line %u: COPY: '%.200s' is a hard link; give the file itself in the context",
			    cp->s->line, m->name);
		return -EINVAL;
	}
	if ((size_t)snprintf(name, sizeof(name), "%s%s", rel, m->kind == TAR_DIR ? "/" : "") >=
		    sizeof(name) ||
	    strlen(cp->target) + 1 + strlen(name) > AGENT_PATH_MAX) {
		/* never cut short into another name in the guest */
		api_err_set(cp->e, API_E_BAD_ARCHIVE,
			    "build file line %u: COPY: '%.200s' is too long a name under %.200s (at most %d bytes)",
			    cp->s->line, m->name, cp->target, AGENT_PATH_MAX);
		return -ENAMETOOLONG;
	}
	o.name = name;
	o.name_len = strlen(name);
	o.type = m->kind == TAR_DIR ? '5' : m->kind == TAR_SYMLINK ? '2' : '0';
	o.link = m->link;
	o.link_len = m->link ? m->link_len : 0;
	o.size = m->kind == TAR_FILE ? m->size : 0;
	o.mode = m->mode;
	o.mtime = m->mtime;
	hl = tar_header_build(&o, hdr, sizeof(hdr));
	if (hl < 0) {
		api_err_set(cp->e, API_E_BAD_ARCHIVE,
			    "build file line %u: COPY: member '%.200s': %s", cp->s->line, m->name,
			    strerror((int)-hl));
		return (int)hl;
	}
	cp->copying = m->kind == TAR_FILE;
	cp->size = o.size;
	return put(cp, hdr, (size_t)hl);
}

int build_context_copy_tar(int fd, const struct build_context *c, const struct bf_step *s,
			   int out_fd, char *target, size_t target_cap, struct api_err *e)
{
	static const uint8_t end[2 * TAR_BLOCK];
	struct copy cp = { .s = s, .out = out_fd, .max = c->max_bytes, .e = e };
	bool one_file = false;
	int n;

	/* COPY file /path/name (no trailing '/'): the file takes that name. */
	if (s->nsrc == 1 && !s->dest_dir && strcmp(s->src[0], ".") != 0)
		for (size_t i = 0; i < c->n; i++)
			if (strcmp(c->m[i].name, s->src[0]) == 0)
				one_file = c->m[i].kind != TAR_DIR;
	if (one_file) {
		const char *slash = strrchr(s->dest, '/');

		cp.file_as = slash[1] ? slash + 1 : NULL;
		n = snprintf(target, target_cap, "%.*s",
			     slash == s->dest ? 1 : (int)(slash - s->dest), s->dest);
	} else {
		n = snprintf(target, target_cap, "%s", s->dest);
	}
	if (n < 0 || (size_t)n >= target_cap) {
		api_err_set(e, API_E_BAD_FIELD,
			    "build file line %u: COPY: the destination is too long", s->line);
		return -1;
	}
	cp.target = target;
	if (walk(fd, c->max_bytes, copy_event, &cp, e))
		return -1;
	return put(&cp, end, sizeof(end)) ? -1 : 0;
}

/* Background processes as JSON; see proc_render.h. */
#include "api/kilnd/bodies/proc_render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/exec_render.h"
#include "lib/base/base64.h"
#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

json_t *proc_render_view(const struct kiln_proc_entry *p)
{
	json_t *o = json_object(), *argv = json_array();
	int r = 0;

	if (!o || !argv) {
		json_decref(o);
		json_decref(argv);
		return NULL;
	}
	/* argv comes from the guest: strings that are not UTF-8 get U+FFFD
	 * (the client library already checked them as JSON strings). */
	for (size_t i = 0; i < p->argc; i++)
		r |= json_array_append_new(argv, json_string(p->argv[i]));
	r |= json_object_set_new(o, "id", json_integer(p->id));
	r |= json_object_set_new(o, "pid", json_integer(p->pid));
	r |= json_object_set_new(o, "argv", argv);
	if (p->argv_truncated)
		r |= json_object_set_new(o, "argv_truncated", json_true());
	r |= json_object_set_new(o, "pty", json_boolean(p->pty));
	r |= json_object_set_new(o, "running", json_boolean(p->running));
	r |= json_object_set_new(o, "exit_code",
				 p->running || p->signal || p->exit_code < 0
					 ? json_null()
					 : json_integer(p->exit_code));
	r |= json_object_set_new(o, "signal", p->signal ? json_integer(p->signal) : json_null());
	r |= json_object_set_new(o, "timed_out", json_boolean(p->timed_out));
	r |= json_object_set_new(o, "output_bytes", json_integer((json_int_t)p->seq));
	r |= json_object_set_new(o, "attached", json_integer(p->attached));
	if (r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int put_exit(json_t *o, const struct kiln_exit_status *ex)
{
	int r = 0;

	r |= json_object_set_new(o, "id", json_integer(ex->id));
	r |= json_object_set_new(o, "pid", json_integer(ex->pid));
	return r || exit_render_status(o, ex) || exit_render_times(o, ex) ? -ENOMEM : 0;
}

json_t *proc_render_exit(const struct kiln_exit_status *ex)
{
	json_t *o = json_object();

	if (!o || put_exit(o, ex)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void proc_out_enc_init(struct proc_out_enc *enc, bool base64)
{
	memset(enc, 0, sizeof(*enc));
	enc->base64 = base64;
}

/* A growing buffer of event lines. */
struct lines {
	char *s;
	size_t len;
	bool oom;
};

/* Append o (consumed) as one compact line. */
static void add(struct lines *l, json_t *o)
{
	char *s = o && !l->oom ? json_text(o, JSON_COMPACT) : NULL, *t;
	size_t n;

	json_decref(o);
	if (!s) {
		l->oom = true;
		return;
	}
	n = strlen(s);
	t = realloc(l->s, l->len + n + 2);
	if (!t) {
		free(s);
		l->oom = true;
		return;
	}
	memcpy(t + l->len, s, n);
	t[l->len + n] = '\n';
	t[l->len + n + 1] = '\0';
	l->s = t;
	l->len += n + 1;
	free(s);
}

static char *done(struct lines *l, size_t *len)
{
	if (l->oom) {
		free(l->s);
		*len = 0;
		return NULL;
	}
	*len = l->len;
	return l->s;
}

static void add_output(struct lines *l, enum agent_stream st, uint64_t seq, const uint8_t *d,
		       size_t n, bool base64)
{
	json_t *v;
	char *b;

	base64 = base64 || !utf8_valid(d, n);
	if (!base64) {
		v = json_stringn_nocheck((const char *)d, n);
	} else {
		b = malloc(base64_encoded_size(n));
		v = NULL;
		if (b) {
			base64_encode(d, n, b);
			v = json_string_nocheck(b);
		}
		free(b);
	}
	if (!v) {
		l->oom = true;
		return;
	}
	add(l,
	    json_pack("{s:s,s:I,s:o}", "type", st == AGENT_STDERR ? "stderr" : "stdout", "seq",
		      (json_int_t)seq, base64 ? "data_base64" : "data", v));
}

/* Held bytes out first (an unfinished character: base64). */
static void add_held(struct lines *l, struct proc_out_enc *enc)
{
	if (!enc->held_len)
		return;
	add_output(l, enc->st, enc->seq, enc->held, enc->held_len, true);
	enc->held_len = 0;
}

int proc_event_output(struct proc_out_enc *enc, enum agent_stream st, uint64_t seq,
		      const uint8_t *d, size_t n, char **line, size_t *len)
{
	struct lines l = { 0 };
	uint8_t *buf;
	size_t total, keep;
	uint64_t first;

	*line = NULL;
	*len = 0;
	if (enc->base64 || enc->held_len == 0 || enc->st != st || enc->seq + enc->held_len != seq)
		add_held(&l, enc);
	if (enc->base64) {
		if (n)
			add_output(&l, st, seq, d, n, true);
		*line = done(&l, len);
		return l.oom ? -ENOMEM : 0;
	}
	total = enc->held_len + n;
	first = enc->held_len ? enc->seq : seq;
	buf = malloc(total ? total : 1);
	if (!buf) {
		free(l.s);
		return -ENOMEM;
	}
	memcpy(buf, enc->held, enc->held_len);
	if (n)
		memcpy(buf + enc->held_len, d, n);
	keep = utf8_complete_prefix(buf, total);
	/* Hold the tail back only when the rest is text: base64 needs no
	 * character boundaries. */
	if (!utf8_valid(buf, keep))
		keep = total;
	enc->held_len = total - keep;
	memcpy(enc->held, buf + keep, enc->held_len);
	enc->st = st;
	enc->seq = first + keep;
	if (keep)
		add_output(&l, st, first, buf, keep, false);
	free(buf);
	*line = done(&l, len);
	if (l.oom)
		return -ENOMEM;
	return 0;
}

char *proc_event_gap(struct proc_out_enc *enc, uint64_t seq, uint64_t bytes, size_t *len)
{
	struct lines l = { 0 };

	add_held(&l, enc);
	add(&l,
	    json_pack("{s:s,s:I,s:I}", "type", "gap", "seq", (json_int_t)seq, "bytes",
		      (json_int_t)bytes));
	return done(&l, len);
}

char *proc_event_exit(struct proc_out_enc *enc, const struct kiln_exit_status *ex, size_t *len)
{
	struct lines l = { 0 };
	json_t *o = json_pack("{s:s}", "type", "exit");

	add_held(&l, enc);
	if (o && put_exit(o, ex)) {
		json_decref(o);
		o = NULL;
	}
	add(&l, o);
	return done(&l, len);
}

char *proc_event_attached(const struct kiln_proc_info *a, size_t *len)
{
	struct lines l = { 0 };

	add(&l,
	    json_pack("{s:s,s:I,s:i,s:b,s:b,s:I}", "type", "attached", "id", (json_int_t)a->id,
		      "pid", a->pid, "pty", a->pty, "running", a->running, "seq",
		      (json_int_t)a->seq));
	return done(&l, len);
}

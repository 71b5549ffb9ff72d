/* kilnd's answers as text (cli_format.h). */
#include "api/kiln/cli_format.h"
#include "lib/base/text_clean.h"

#include <stdbool.h>
#include <string.h>

/* s cleaned and padded to width (bytes; names are ASCII by kilnd's rules). */
static void put_cell(FILE *out, const char *s, int width)
{
	int n = (int)strlen(s);

	text_clean_term_fput(out, s);
	for (; n < width; n++)
		fputc(' ', out);
	fputc(' ', out);
	fputc(' ', out);
}

/*
 * r[key] when it is an array and shape accepts every element, else NULL:
 * a table is checked whole before its first line, so a kilnd of another
 * version gets the shape report, not half a table.
 */
static const json_t *checked_list(const json_t *r, const char *key, bool (*shape)(const json_t *))
{
	const json_t *list = json_object_get(r, key), *e;
	size_t i;

	if (!json_is_array(list))
		return NULL;
	json_array_foreach(list, i, e)
	{
		if (!shape(e))
			return NULL;
	}
	return list;
}

void cli_format_size(char *buf, size_t n, long long bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%lld B", bytes);
	else
		snprintf(buf, n, "%.1f %s", v, unit[u]);
}

int cli_format_health(FILE *out, const json_t *h)
{
	const char *status, *version;
	json_int_t up, count;

	if (json_unpack((json_t *)h, "{s:s, s:s, s:I, s:I}", "status", &status, "version", &version,
			"uptime_s", &up, "sandboxes", &count))
		return -1;
	text_clean_term_fput(out, status);
	fputs("  kilnd ", out);
	text_clean_term_fput(out, version);
	fprintf(out, "  up %llds  %lld sandbox%s\n", (long long)up, (long long)count,
		count == 1 ? "" : "es");
	/* Warm pools (kilnd --pool), one line each; a kilnd without them says nothing. */
	const json_t *pools = json_object_get(h, "pools"), *p;
	size_t i;

	json_array_foreach(pools, i, p)
	{
		const char *image = json_string_value(json_object_get(p, "image"));
		const char *err = json_string_value(json_object_get(p, "last_error"));
		json_int_t ready = json_integer_value(json_object_get(p, "ready"));
		json_int_t size = json_integer_value(json_object_get(p, "size"));

		if (!image)
			continue;
		fputs("pool ", out);
		text_clean_term_fput(out, image);
		fprintf(out, ": %lld/%lld ready, %lld served, %lld missed", (long long)ready,
			(long long)size, (long long)json_integer_value(json_object_get(p, "hits")),
			(long long)json_integer_value(json_object_get(p, "misses")));
		if (err) {
			fputs("; filling failed: ", out);
			text_clean_term_fput(out, err);
		}
		fputc('\n', out);
	}
	return 0;
}

int cli_format_images(FILE *out, const json_t *r)
{
	const json_t *images = json_object_get(r, "images"), *img,
		     *kernel = json_object_get(r, "kernel");
	size_t i;
	int wname = 4;
	char size[32];

	if (!json_is_array(images))
		return -1;
	json_array_foreach(images, i, img)
	{
		const char *name = json_string_value(json_object_get(img, "name"));

		if (!name || !json_is_string(json_object_get(img, "path")) ||
		    !json_is_string(json_object_get(img, "source")) ||
		    !json_is_integer(json_object_get(img, "size_bytes")))
			return -1;
		if ((int)strlen(name) > wname)
			wname = (int)strlen(name);
	}
	put_cell(out, "NAME", wname);
	put_cell(out, "SIZE", 10);
	put_cell(out, "SOURCE", 9);
	put_cell(out, "DIGEST", 19);
	fputs("PATH\n", out);
	json_array_foreach(images, i, img)
	{
		cli_format_size(size, sizeof(size),
				json_integer_value(json_object_get(img, "size_bytes")));
		put_cell(out, json_string_value(json_object_get(img, "name")), wname);
		put_cell(out, size, 10);
		put_cell(out, json_string_value(json_object_get(img, "source")), 9);
		{
			/* sha256: and the first 12 hex digits, as docker shows ids */
			const char *dg = json_string_value(json_object_get(img, "digest"));
			char shortd[20];

			snprintf(shortd, sizeof(shortd), "%.19s", dg ? dg : "-");
			put_cell(out, shortd, 19);
		}
		text_clean_term_fput(out, json_string_value(json_object_get(img, "path")));
		fputc('\n', out);
	}
	if (json_is_string(json_object_get(kernel, "path"))) {
		cli_format_size(size, sizeof(size),
				json_integer_value(json_object_get(kernel, "size_bytes")));
		fputs("kernel: ", out);
		text_clean_term_fput(out, json_string_value(json_object_get(kernel, "path")));
		fprintf(out, " (%s)\n", size);
	}
	return 0;
}

int cli_format_list(FILE *out, const json_t *r)
{
	const json_t *list = json_object_get(r, "sandboxes"), *sb;
	size_t i;
	int wimage = 5;

	if (!json_is_array(list))
		return -1;
	json_array_foreach(list, i, sb)
	{
		const char *image = json_string_value(json_object_get(sb, "image"));

		if (!json_is_string(json_object_get(sb, "id")) ||
		    !json_is_string(json_object_get(sb, "state")) || !image ||
		    !json_is_string(json_object_get(sb, "created_at")))
			return -1;
		if ((int)strlen(image) > wimage)
			wimage = (int)strlen(image);
	}
	put_cell(out, "ID", 12);
	put_cell(out, "STATE", 8);
	put_cell(out, "IMAGE", wimage);
	put_cell(out, "CPUS", 4);
	put_cell(out, "MEMORY", 8);
	put_cell(out, "CREATED", 24);
	fputs("LABELS\n", out);
	json_array_foreach(list, i, sb)
	{
		char cpus[24], mem[32];
		const char *key;
		const json_t *v;
		bool first = true;

		snprintf(cpus, sizeof(cpus), "%lld",
			 (long long)json_integer_value(json_object_get(sb, "cpus")));
		snprintf(mem, sizeof(mem), "%lld MiB",
			 (long long)json_integer_value(json_object_get(sb, "memory_mib")));
		put_cell(out, json_string_value(json_object_get(sb, "id")), 12);
		put_cell(out, json_string_value(json_object_get(sb, "state")), 8);
		put_cell(out, json_string_value(json_object_get(sb, "image")), wimage);
		put_cell(out, cpus, 4);
		put_cell(out, mem, 8);
		put_cell(out, json_string_value(json_object_get(sb, "created_at")), 24);
		json_object_foreach((json_t *)json_object_get(sb, "labels"), key, v)
		{
			if (!first)
				fputc(',', out);
			first = false;
			text_clean_term_fput(out, key);
			fputc('=', out);
			text_clean_term_fput(out, json_is_string(v) ? json_string_value(v) : "?");
		}
		fputc('\n', out);
	}
	return 0;
}

int cli_format_state(FILE *out, const json_t *sb)
{
	const char *id = json_string_value(json_object_get(sb, "id"));
	const char *state = json_string_value(json_object_get(sb, "state"));
	const json_t *le = json_object_get(sb, "last_exit");
	const char *reason = json_string_value(json_object_get(le, "reason"));
	const char *msg = json_string_value(json_object_get(le, "message"));

	if (!id || !state)
		return -1;
	text_clean_term_fput(out, id);
	fputc(' ', out);
	text_clean_term_fput(out, state);
	if (!strcmp(state, "crashed") && reason) {
		fputs(" (", out);
		text_clean_term_fput(out, reason);
		if (msg) {
			fputs(": ", out);
			text_clean_term_fput(out, msg);
		}
		fputc(')', out);
	}
	fputc('\n', out);
	return 0;
}

/* "exit 3", "signal 15", "timed out", "running" for a process or exit object. */
static void put_proc_state(FILE *out, const json_t *p)
{
	const json_t *code = json_object_get(p, "exit_code"), *sig = json_object_get(p, "signal");

	if (json_is_true(json_object_get(p, "running")))
		fputs("running", out);
	else if (json_is_true(json_object_get(p, "timed_out")))
		fputs("timed out", out);
	else if (json_is_integer(code))
		fprintf(out, "exit %lld", (long long)json_integer_value(code));
	else if (json_is_integer(sig))
		fprintf(out, "signal %lld", (long long)json_integer_value(sig));
	else
		fputs("exited", out);
}

static bool proc_shape(const json_t *p)
{
	return json_is_integer(json_object_get(p, "id")) &&
		json_is_integer(json_object_get(p, "pid")) &&
		json_is_boolean(json_object_get(p, "running")) &&
		json_is_array(json_object_get(p, "argv"));
}

int cli_format_procs(FILE *out, const json_t *r)
{
	const json_t *list = checked_list(r, "processes", proc_shape), *p;
	size_t i;

	if (!list)
		return -1;
	fprintf(out, "%-6s %-7s %-10s %-4s %-10s ARGV\n", "ID", "PID", "STATE", "PTY", "OUTPUT");
	json_array_foreach(list, i, p)
	{
		char state[32] = "", size[32];
		FILE *m = fmemopen(state, sizeof(state) - 1, "w");
		const json_t *a;
		size_t k;

		if (m) {
			put_proc_state(m, p);
			fclose(m);
		}
		cli_format_size(size, sizeof(size),
				json_integer_value(json_object_get(p, "output_bytes")));
		fprintf(out, "%-6lld %-7lld %-10s %-4s %-10s",
			(long long)json_integer_value(json_object_get(p, "id")),
			(long long)json_integer_value(json_object_get(p, "pid")), state,
			json_is_true(json_object_get(p, "pty")) ? "yes" : "no", size);
		json_array_foreach(json_object_get(p, "argv"), k, a)
		{
			fputc(' ', out);
			text_clean_term_fput(out, json_is_string(a) ? json_string_value(a) : "?");
		}
		fputc('\n', out);
	}
	return 0;
}

int cli_format_exit(FILE *out, const json_t *ex)
{
	if (!json_is_object(ex) ||
	    (!json_is_integer(json_object_get(ex, "exit_code")) &&
	     !json_is_integer(json_object_get(ex, "signal"))))
		return -1;
	put_proc_state(out, ex);
	fputc('\n', out);
	return 0;
}

static bool port_shape(const json_t *m)
{
	return json_is_string(json_object_get(m, "host_address")) &&
		json_is_integer(json_object_get(m, "host_port")) &&
		json_is_integer(json_object_get(m, "guest_port"));
}

int cli_format_port(FILE *out, const json_t *m)
{
	const json_t *target = json_object_get(m, "target");

	if (!port_shape(m))
		return -1;
	text_clean_term_fput(out, json_string_value(json_object_get(m, "host_address")));
	fprintf(out, ":%lld -> guest port %lld",
		(long long)json_integer_value(json_object_get(m, "host_port")),
		(long long)json_integer_value(json_object_get(m, "guest_port")));
	/* A newer kilnd says what the guest side is (TCP or vsock). */
	if (json_is_string(target)) {
		fputs(" (", out);
		text_clean_term_fput(out, json_string_value(target));
		fputc(')', out);
	}
	fputc('\n', out);
	return 0;
}

int cli_format_ports(FILE *out, const json_t *r)
{
	const json_t *list = checked_list(r, "ports", port_shape), *m;
	size_t i;

	if (!list)
		return -1;
	fprintf(out, "%-21s %-10s %-7s %-8s %s\n", "HOST", "GUEST", "TARGET", "OPEN", "TOTAL");
	json_array_foreach(list, i, m)
	{
		char host[64], target[32];

		snprintf(host, sizeof(host), "%.40s:%lld",
			 json_string_value(json_object_get(m, "host_address")),
			 (long long)json_integer_value(json_object_get(m, "host_port")));
		snprintf(target, sizeof(target), "%s",
			 json_string_value(json_object_get(m, "target")) ?: "-");
		text_clean_term_inplace(host);
		text_clean_term_inplace(target);
		fprintf(out, "%-21s %-10lld %-7s %-8lld %lld\n", host,
			(long long)json_integer_value(json_object_get(m, "guest_port")), target,
			(long long)json_integer_value(json_object_get(m, "connections")),
			(long long)json_integer_value(json_object_get(m, "connections_total")));
	}
	return 0;
}

static bool preview_shape(const json_t *p)
{
	return json_is_integer(json_object_get(p, "port")) &&
		json_is_boolean(json_object_get(p, "public"));
}

/* "name: value" when value is a string (kilnd without --preview-listen has no URLs). */
static void put_field(FILE *out, const char *name, const json_t *v)
{
	if (!json_is_string(v))
		return;
	fprintf(out, "%s: ", name);
	text_clean_term_fput(out, json_string_value(v));
	fputc('\n', out);
}

int cli_format_preview(FILE *out, const json_t *p)
{
	if (!preview_shape(p))
		return -1;
	put_field(out, "url", json_object_get(p, "url"));
	put_field(out, "path_url", json_object_get(p, "path_url"));
	put_field(out, "token", json_object_get(p, "token"));
	if (!json_is_string(json_object_get(p, "url")))
		fputs("(kilnd serves no previews: start it with --preview-listen ADDR:PORT)\n",
		      out);
	return 0;
}

int cli_format_previews(FILE *out, const json_t *r)
{
	const json_t *list = checked_list(r, "previews", preview_shape), *p;
	size_t i;

	if (!list)
		return -1;
	fprintf(out, "%-6s %-7s %s\n", "PORT", "ACCESS", "URL");
	json_array_foreach(list, i, p)
	{
		const char *url = json_string_value(json_object_get(p, "url"));

		fprintf(out, "%-6lld %-7s ",
			(long long)json_integer_value(json_object_get(p, "port")),
			json_is_true(json_object_get(p, "public")) ? "public" : "token");
		text_clean_term_fput(out, url ? url : "-");
		fputc('\n', out);
	}
	return 0;
}

/* "drwxr-xr-x" from a stat object's kind and mode. */
static void mode_string(const json_t *st, char s[11])
{
	static const char *const kinds[] = { "file", "-",    "dir",   "d",      "symlink",
					     "l",    "fifo", "p",     "socket", "s",
					     "char", "c",    "block", "b" };
	const char *kind = json_string_value(json_object_get(st, "kind"));
	unsigned m = (unsigned)json_integer_value(json_object_get(st, "mode"));

	s[0] = '?';
	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i += 2)
		if (!strcmp(kind, kinds[i]))
			s[0] = kinds[i + 1][0];
	for (int i = 0; i < 9; i++)
		s[1 + i] = m & (0400u >> i) ? "rwxrwxrwx"[i] : '-';
	if (m & 04000)
		s[3] = s[3] == 'x' ? 's' : 'S';
	if (m & 02000)
		s[6] = s[6] == 'x' ? 's' : 'S';
	if (m & 01000)
		s[9] = s[9] == 'x' ? 't' : 'T';
	s[10] = 0;
}

static bool stat_shape(const json_t *st)
{
	return json_is_string(json_object_get(st, "path")) &&
		json_is_string(json_object_get(st, "kind")) &&
		json_is_integer(json_object_get(st, "size")) &&
		json_is_integer(json_object_get(st, "mode"));
}

/* One `ls -l` style line of a stat object. */
static void put_entry(FILE *out, const json_t *st)
{
	char mode[11];
	const char *mtime = json_string_value(json_object_get(st, "mtime"));
	const char *target = json_string_value(json_object_get(st, "target"));

	mode_string(st, mode);
	fprintf(out, "%s %5lld %5lld %12lld %-24s ", mode,
		(long long)json_integer_value(json_object_get(st, "uid")),
		(long long)json_integer_value(json_object_get(st, "gid")),
		(long long)json_integer_value(json_object_get(st, "size")), mtime ? mtime : "-");
	text_clean_term_fput(out, json_string_value(json_object_get(st, "path")));
	if (target) {
		fputs(" -> ", out);
		text_clean_term_fput(out, target);
	}
	fputc('\n', out);
}

int cli_format_fs_list(FILE *out, const json_t *r)
{
	const json_t *list = checked_list(r, "entries", stat_shape), *e;
	size_t i;

	if (!list)
		return -1;
	json_array_foreach(list, i, e)
	{
		put_entry(out, e);
	}
	return 0;
}

int cli_format_stat(FILE *out, const json_t *st)
{
	char mode[11];
	const char *target = json_string_value(json_object_get(st, "target"));
	const char *mtime = json_string_value(json_object_get(st, "mtime"));

	if (!stat_shape(st))
		return -1;
	mode_string(st, mode);
	fputs("path:  ", out);
	text_clean_term_fput(out, json_string_value(json_object_get(st, "path")));
	fputs("\nkind:  ", out);
	text_clean_term_fput(out, json_string_value(json_object_get(st, "kind")));
	if (target) {
		fputs(" -> ", out);
		text_clean_term_fput(out, target);
	}
	fprintf(out, "\nsize:  %lld\nmode:  %04llo (%s)\nowner: %lld:%lld\nlinks: %lld\nmtime: ",
		(long long)json_integer_value(json_object_get(st, "size")),
		(unsigned long long)json_integer_value(json_object_get(st, "mode")), mode,
		(long long)json_integer_value(json_object_get(st, "uid")),
		(long long)json_integer_value(json_object_get(st, "gid")),
		(long long)json_integer_value(json_object_get(st, "nlink")));
	text_clean_term_fput(out, mtime ? mtime : "-");
	fputc('\n', out);
	return 0;
}

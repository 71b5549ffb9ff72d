/* kilnd's answers as text (cli_format.h). */
#include "cli_format.h"

#include <stdbool.h>
#include <string.h>

static void put_clean(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

/* s cleaned and padded to width (bytes; names are ASCII by kilnd's rules). */
static void put_cell(FILE *out, const char *s, int width)
{
	int n = (int)strlen(s);

	put_clean(out, s);
	for (; n < width; n++)
		fputc(' ', out);
	fputc(' ', out);
	fputc(' ', out);
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

	if (json_unpack((json_t *)h, "{s:s, s:s, s:I, s:I}", "status", &status, "version", &version, "uptime_s", &up,
			"sandboxes", &count))
		return -1;
	put_clean(out, status);
	fputs("  kilnd ", out);
	put_clean(out, version);
	fprintf(out, "  up %llds  %lld sandbox%s\n", (long long)up, (long long)count, count == 1 ? "" : "es");
	return 0;
}

int cli_format_images(FILE *out, const json_t *r)
{
	const json_t *images = json_object_get(r, "images"), *img, *kernel = json_object_get(r, "kernel");
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
	fputs("PATH\n", out);
	json_array_foreach(images, i, img)
	{
		cli_format_size(size, sizeof(size), json_integer_value(json_object_get(img, "size_bytes")));
		put_cell(out, json_string_value(json_object_get(img, "name")), wname);
		put_cell(out, size, 10);
		put_cell(out, json_string_value(json_object_get(img, "source")), 9);
		put_clean(out, json_string_value(json_object_get(img, "path")));
		fputc('\n', out);
	}
	if (json_is_string(json_object_get(kernel, "path"))) {
		cli_format_size(size, sizeof(size), json_integer_value(json_object_get(kernel, "size_bytes")));
		fputs("kernel: ", out);
		put_clean(out, json_string_value(json_object_get(kernel, "path")));
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

		if (!json_is_string(json_object_get(sb, "id")) || !json_is_string(json_object_get(sb, "state")) ||
		    !image || !json_is_string(json_object_get(sb, "created_at")))
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

		snprintf(cpus, sizeof(cpus), "%lld", (long long)json_integer_value(json_object_get(sb, "cpus")));
		snprintf(mem, sizeof(mem), "%lld MiB", (long long)json_integer_value(json_object_get(sb, "memory_mib")));
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
			put_clean(out, key);
			fputc('=', out);
			put_clean(out, json_is_string(v) ? json_string_value(v) : "?");
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
	put_clean(out, id);
	fputc(' ', out);
	put_clean(out, state);
	if (!strcmp(state, "crashed") && reason) {
		fputs(" (", out);
		put_clean(out, reason);
		if (msg) {
			fputs(": ", out);
			put_clean(out, msg);
		}
		fputc(')', out);
	}
	fputc('\n', out);
	return 0;
}

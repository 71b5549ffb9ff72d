/* kiln-vmm's console and stderr, read back; see vmm_output.h. */
#include "api/kilnd/supervision/vmm_output.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"
#include "lib/base/utf8.h"

void vmm_output_lines_backwards(const uint8_t *buf, size_t n, bool whole,
				bool (*fn)(void *arg, const uint8_t *l, size_t len), void *arg)
{
	size_t first = 0, end = n;

	if (!whole) {
		const uint8_t *nl = memchr(buf, '\n', n);

		if (!nl)
			return;
		first = (size_t)(nl - buf) + 1;
	}
	while (end > first) {
		size_t s = end;

		while (s > first && buf[s - 1] != '\n')
			s--;
		if (!fn(arg, buf + s, end - s))
			return;
		end = s ? s - 1 : 0;
		if (s == first)
			return;
	}
}

struct tail {
	json_t *arr;
	const char *prefix; /* or NULL: every line */
	size_t max_lines, line_max;
	bool oom;
};

static bool tail_line(void *arg, const uint8_t *l, size_t len)
{
	struct tail *t = arg;
	char *clean;
	json_t *s;

	if (t->prefix) {
		size_t p = strlen(t->prefix);

		if (len < p || memcmp(l, t->prefix, p) != 0)
			return true;
		l += p;
		len -= p;
	}
	if (len > t->line_max)
		len = t->line_max;
	clean = malloc(3 * len + 1);
	if (!clean) {
		t->oom = true;
		return false;
	}
	/* Cutting may split a character: the sanitizer turns the piece into U+FFFD. */
	if (utf8_lossy(clean, 3 * len + 1, l, len, UTF8_DROP_CONTROLS, NULL) == 0) {
		free(clean);
		return true; /* blank (or only control characters) */
	}
	s = json_string(clean);
	free(clean);
	if (!s || json_array_insert_new(t->arr, 0, s)) {
		t->oom = true;
		return false;
	}
	return json_array_size(t->arr) < t->max_lines;
}

json_t *vmm_output_tail(const uint8_t *buf, size_t n, bool whole, size_t max_lines, size_t line_max)
{
	return vmm_output_tail_prefixed(buf, n, whole, NULL, max_lines, line_max);
}

json_t *vmm_output_tail_prefixed(const uint8_t *buf, size_t n, bool whole, const char *prefix,
				 size_t max_lines, size_t line_max)
{
	struct tail t = {
		.arr = json_array(), .prefix = prefix, .max_lines = max_lines, .line_max = line_max
	};

	if (!t.arr)
		return NULL;
	if (max_lines)
		vmm_output_lines_backwards(buf, n, whole, tail_line, &t);
	if (t.oom) {
		json_decref(t.arr);
		return NULL;
	}
	return t.arr;
}

struct find {
	const char *prefix;
	const uint8_t *line;
	size_t len;
};

static bool find_line(void *arg, const uint8_t *l, size_t len)
{
	struct find *f = arg;
	size_t p = strlen(f->prefix);

	if (len >= p && memcmp(l, f->prefix, p) == 0) {
		f->line = l;
		f->len = len;
		return false;
	}
	return true;
}

json_t *vmm_output_message(const uint8_t *buf, size_t n)
{
	struct find f = { .prefix = "kiln-vmm: " };
	char *clean;
	json_t *s;

	vmm_output_lines_backwards(buf, n, true, find_line, &f);
	if (!f.line)
		return NULL;
	if (f.len > 1024)
		f.len = 1024;
	clean = malloc(3 * f.len + 1);
	if (!clean)
		return NULL;
	utf8_lossy(clean, 3 * f.len + 1, f.line, f.len, UTF8_DROP_CONTROLS, NULL);
	s = json_string(clean);
	free(clean);
	return s;
}

json_t *vmm_output_timeline(const uint8_t *buf, size_t n)
{
	struct find f = { .prefix = "{\"unit\":\"ms\",\"milestones\":" };
	json_t *t;

	vmm_output_lines_backwards(buf, n, true, find_line, &f);
	if (!f.line)
		return NULL;
	t = json_strict_loadb((const char *)f.line, f.len, NULL);
	if (t && (!json_is_object(t) || !json_is_array(json_object_get(t, "milestones")))) {
		json_decref(t);
		return NULL;
	}
	return t;
}

/*
 * Unit tests of api/kilnd/bodies/watch_render.c: the NDJSON lines of GET
 * /v1/sandboxes/{id}/files/watch (docs/api.md, "Watching files"), from the
 * agent client's events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/watch_render.h"

static void line_is(char *line, const size_t *len, const char *want)
{
	assert_non_null(line);
	assert_int_equal(*len, strlen(want));
	assert_string_equal(line, want);
	free(line);
}

static void test_render(void **state)
{
	struct kiln_fs_event ev = {
		.size = sizeof(ev), .change = KILN_FS_CREATE, .seq = 0, .path = "src/a.c"
	};
	size_t len;

	(void)state;
	line_is(watch_line_started("/w", true, 3, &len), &len,
		"{\"type\":\"watching\",\"path\":\"/w\",\"recursive\":true,\"watches\":3}\n");
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"create\",\"seq\":0,\"path\":\"src/a.c\",\"is_dir\":false}\n");
	ev = (struct kiln_fs_event){ .size = sizeof(ev),
				     .change = KILN_FS_RENAME,
				     .seq = 7,
				     .path = "d2",
				     .old_path = "d1",
				     .is_dir = 1,
				     .lossy = 1 };
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"rename\",\"seq\":7,\"path\":\"d2\",\"old_path\":\"d1\",\"is_dir\":true,\"lossy\":true}\n");
	ev = (struct kiln_fs_event){ .size = sizeof(ev),
				     .change = KILN_FS_OVERFLOW,
				     .seq = 8,
				     .reason = "queue",
				     .dropped = 12 };
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"overflow\",\"seq\":8,\"reason\":\"queue\",\"dropped\":12}\n");
	ev.change = (enum kiln_fs_change)AGENT_FS_KIND_COUNT;
	assert_null(watch_line_event(&ev, &len));
	line_is(watch_line_end("deleted", NULL, &len), &len,
		"{\"type\":\"end\",\"reason\":\"deleted\"}\n");
	line_is(watch_line_end("sandbox_stopped", "hibernated", &len), &len,
		"{\"type\":\"end\",\"reason\":\"sandbox_stopped\",\"state\":\"hibernated\"}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

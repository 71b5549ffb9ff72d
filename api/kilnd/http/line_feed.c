/* A response body of lines made on demand; see line_feed.h. */
#include "api/kilnd/http/line_feed.h"

#include <stdlib.h>
#include <string.h>

size_t line_feed_read(struct line_feed *f, char *buf, size_t max, bool (*next)(void *arg),
		      void *arg)
{
	size_t n;

	if (f->off == f->len) {
		line_feed_free(f);
		if (!next(arg) || !f->len)
			return 0;
	}
	n = f->len - f->off < max ? f->len - f->off : max;
	memcpy(buf, f->line + f->off, n);
	f->off += n;
	return n;
}

void line_feed_free(struct line_feed *f)
{
	free(f->line);
	f->line = NULL;
	f->len = f->off = 0;
}

/*
 * line_feed: a streamed response body made of whole lines that the
 * response's reader produces one at a time, on demand (a process's output
 * events, a file watch's events, pulled from the agent): the copy-out
 * half of such a reader, so kilnd holds one line per response.
 *
 * Contract: pure. The producer `next` puts the following line into
 * f->line / f->len (malloc'd; the feed frees it once copied out) and
 * returns true, or false when there is none (the stream ended, or broke:
 * the caller knows which).
 */
#ifndef KILN_LINE_FEED_H
#define KILN_LINE_FEED_H

#include <stdbool.h>
#include <stddef.h>

struct line_feed {
	char *line; /* the line being sent */
	size_t len, off;
};

/* Up to max bytes of the current line into buf, asking next for a new
 * line once it is used up. The count (> 0), or 0 when next had none. */
size_t line_feed_read(struct line_feed *f, char *buf, size_t max, bool (*next)(void *arg),
		      void *arg);
void line_feed_free(struct line_feed *f);

#endif

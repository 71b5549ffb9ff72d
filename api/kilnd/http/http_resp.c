/* An answer's framing and head; see http_resp.h. */
#include "api/kilnd/http/http_resp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "api/kilnd/http/http_io.h"

enum http_framing http_resp_framing(unsigned status, bool stream, int minor)
{
	/* RFC 9112 section 6.3: these never have a body, whatever follows. */
	if (status < 200 || status == 204 || status == 304)
		return HTTP_FRAME_NONE;
	if (!stream)
		return HTTP_FRAME_LENGTH;
	return minor >= 1 ? HTTP_FRAME_CHUNKED : HTTP_FRAME_CLOSE;
}

bool http_resp_keep(bool keep_alive, unsigned status, enum http_framing f)
{
	return keep_alive && status != 101 && f != HTTP_FRAME_CLOSE;
}

const char *http_resp_connection(int minor, bool keep, unsigned status)
{
	if (status == 101)
		return NULL;
	if (!keep)
		return "close";
	return minor == 0 ? "keep-alive" : NULL;
}

int http_resp_head(char *buf, size_t cap, const struct http_resp_head *h)
{
	char date[64], framing[48] = "";
	const char *ct = h->content_type, *conn = h->connection;
	struct tm tm;
	int n;

	/* RFC 9110 section 5.6.7: IMF-fixdate. */
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&h->date, &tm));
	if (h->framing == HTTP_FRAME_CHUNKED)
		snprintf(framing, sizeof(framing), "Transfer-Encoding: chunked\r\n");
	else if (h->framing == HTTP_FRAME_LENGTH)
		snprintf(framing, sizeof(framing), "Content-Length: %" PRIu64 "\r\n", h->length);
	n = snprintf(buf, cap,
		     "HTTP/1.1 %u %s\r\nDate: %s\r\nCache-Control: no-store\r\n%s%s%s%s%s%s%s%s\r\n",
		     h->status, http_reason(h->status), date, ct ? "Content-Type: " : "",
		     ct ? ct : "", ct ? "\r\n" : "", framing, conn ? "Connection: " : "",
		     conn ? conn : "", conn ? "\r\n" : "", h->headers ? h->headers : "");
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : n;
}

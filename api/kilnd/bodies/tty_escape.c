/* The tty stream's resize escape; see tty_escape.h. */
#include "api/kilnd/bodies/tty_escape.h"

#include <string.h>

static const char prefix[] = "\x1b]kiln;resize;";
#define PREFIX_LEN (sizeof(prefix) - 1)
#define DIGITS_MAX 5
#define BEL 0x07
#define ESC 0x1b

enum match { M_NO, M_PARTIAL, M_DONE };

/* Digits at h[*i..n): 1..DIGITS_MAX of them, then `end` (or the end of
 * the buffer: partial). */
static enum match digits(const uint8_t *h, size_t n, size_t *i, uint8_t end, uint32_t *v)
{
	size_t d = 0;

	*v = 0;
	while (*i < n && h[*i] >= '0' && h[*i] <= '9') {
		if (++d > DIGITS_MAX)
			return M_NO;
		*v = *v * 10 + (uint32_t)(h[*i] - '0');
		(*i)++;
	}
	if (*i == n)
		return M_PARTIAL;
	if (d == 0 || h[*i] != end)
		return M_NO;
	(*i)++;
	return M_DONE;
}

/* Is h[0..n) the sequence, a beginning of it, or neither? */
static enum match classify(const uint8_t *h, size_t n, uint32_t *rows, uint32_t *cols)
{
	size_t i;
	enum match m;

	for (i = 0; i < n && i < PREFIX_LEN; i++)
		if (h[i] != (uint8_t)prefix[i])
			return M_NO;
	if (n <= PREFIX_LEN)
		return M_PARTIAL;
	m = digits(h, n, &i, ';', rows);
	if (m != M_DONE)
		return m;
	m = digits(h, n, &i, BEL, cols);
	if (m != M_DONE)
		return m;
	/* BEL is the last byte: the caller classifies after every byte. */
	return i == n ? M_DONE : M_NO;
}

void tty_esc_init(struct tty_esc *p)
{
	memset(p, 0, sizeof(*p));
}

/* The held bytes stopped matching: emit up to the next ESC among them
 * (it may begin a sequence) and keep classifying the rest. */
static void drop_mismatch(struct tty_esc *p, uint8_t *out, size_t *outlen)
{
	uint32_t r, c;

	while (p->n) {
		size_t k = 1;

		while (k < p->n && p->held[k] != ESC)
			k++;
		memcpy(out + *outlen, p->held, k);
		*outlen += k;
		memmove(p->held, p->held + k, p->n - k);
		p->n -= k;
		/* What is left starts with ESC and is shorter than before; a
		 * complete sequence cannot be in it (its BEL would have been
		 * classified when it arrived). */
		if (p->n && classify(p->held, p->n, &r, &c) == M_PARTIAL)
			return;
	}
}

size_t tty_esc_feed(struct tty_esc *p, const uint8_t *in, size_t n, uint8_t *out, size_t *outlen,
		    enum tty_esc_ev *ev, uint16_t *rows, uint16_t *cols)
{
	size_t i = 0;

	*ev = TTY_ESC_NONE;
	while (i < n) {
		uint32_t r, c;
		enum match m;

		if (p->n == 0) {
			/* The common case: copy up to the next ESC at once. */
			const uint8_t *e = memchr(in + i, ESC, n - i);
			size_t k = e ? (size_t)(e - (in + i)) : n - i;

			memcpy(out + *outlen, in + i, k);
			*outlen += k;
			i += k;
			if (i == n)
				break;
		}
		p->held[p->n++] = in[i++];
		m = classify(p->held, p->n, &r, &c);
		if (m == M_PARTIAL)
			continue;
		if (m == M_NO) {
			drop_mismatch(p, out, outlen);
			continue;
		}
		p->n = 0;
		if (r < 1 || r > UINT16_MAX || c < 1 || c > UINT16_MAX) {
			*ev = TTY_ESC_BAD_SIZE;
		} else {
			*ev = TTY_ESC_RESIZE;
			*rows = (uint16_t)r;
			*cols = (uint16_t)c;
		}
		return i;
	}
	return i;
}

size_t tty_esc_pending(const struct tty_esc *p)
{
	return p->n;
}

void tty_esc_flush(struct tty_esc *p, uint8_t *out, size_t *outlen)
{
	memcpy(out + *outlen, p->held, p->n);
	*outlen += p->n;
	p->n = 0;
}

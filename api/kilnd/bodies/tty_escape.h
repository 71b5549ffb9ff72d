/*
 * tty_escape: the in-band resize escape of kilnd's raw terminal stream
 * (GET .../processes/{proc}/tty, docs/api.md "The tty stream").
 *
 * The client's bytes go to the process's terminal unchanged, except for
 * exactly this sequence, which kilnd takes out and turns into a resize:
 *
 *     ESC ] k i l n ; r e s i z e ; ROWS ; COLS BEL
 *     "\x1b]kiln;resize;40;120\x07"
 *
 * ROWS and COLS are 1 to 5 ASCII digits each. It is an OSC (ECMA-48
 * operating system command) whose text no terminal emulator sends as
 * input: terminals send OSC only as answers to queries, and those start
 * with a number ("\x1b]11;rgb:..."), never "kiln".
 *
 * Contract:
 *  - Pure: no I/O, no clock, no allocation. The caller owns the state.
 *  - Any split works: a sequence cut across reads is held (at most
 *    TTY_ESC_MAX - 1 bytes) until it completes or stops matching. Bytes
 *    that stop matching go out as data, in order, and a later ESC among
 *    them may still begin a sequence.
 *  - A complete sequence whose ROWS or COLS is 0 or above 65535 is
 *    consumed and reported as TTY_ESC_BAD_SIZE (the caller ignores it).
 *  - The parser cannot tell a lone ESC key press from the start of a
 *    sequence: the caller flushes what is held (tty_esc_flush) when no
 *    more input came for a moment, so the key is not held back.
 */
#ifndef KILN_TTY_ESCAPE_H
#define KILN_TTY_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* The longest sequence: 14 bytes of prefix, 5 + 1 + 5 digits and ';', BEL. */
#define TTY_ESC_MAX 26

struct tty_esc {
	uint8_t held[TTY_ESC_MAX];
	size_t n;
};

enum tty_esc_ev {
	TTY_ESC_NONE,     /* all of the input was consumed */
	TTY_ESC_RESIZE,   /* a sequence ended: *rows, *cols set */
	TTY_ESC_BAD_SIZE, /* a sequence with a size out of 1..65535 ended */
};

void tty_esc_init(struct tty_esc *p);

/*
 * Consume in[0..n) up to the end of the input or of a sequence, whichever
 * comes first. Bytes for the process are appended to out at *outlen (out
 * must have room for n + TTY_ESC_MAX bytes past *outlen). Returns how many
 * input bytes were consumed; *ev says whether a sequence ended there (then
 * send out[0..*outlen) first, apply the resize, and feed the rest).
 */
size_t tty_esc_feed(struct tty_esc *p, const uint8_t *in, size_t n, uint8_t *out, size_t *outlen,
		    enum tty_esc_ev *ev, uint16_t *rows, uint16_t *cols);

/* Bytes held for an unfinished sequence (0: none). */
size_t tty_esc_pending(const struct tty_esc *p);

/* Give up on an unfinished sequence: its bytes are appended to out
 * (room for TTY_ESC_MAX) at *outlen and forgotten. */
void tty_esc_flush(struct tty_esc *p, uint8_t *out, size_t *outlen);

#endif

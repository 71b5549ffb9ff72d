/*
 * cli_tty: the pure parts of `kiln shell` and `kiln attach`: the
 * HTTP/1.1 upgrade request for kilnd's tty stream (docs/api.md, "GET
 * .../processes/{proc}/tty"), the parse of kilnd's answer head, and the
 * in-band resize escape (tty_escape.h is kilnd's parser of it).
 *
 * Contract:
 *  - Pure: no I/O, no allocation, no global state; the caller owns every
 *    buffer and does the socket and terminal work (cli_cmd_shell.c).
 *  - libcurl cannot hand over a connection after a 101, so the request is
 *    written by hand on a plain AF_UNIX socket; the head parser reads only
 *    what the session needs (status, Content-Length for an error body, the
 *    Upgrade token) and bounds everything: a head that does not end within
 *    CLI_TTY_HEAD_MAX bytes is an error, never a growing buffer.
 *  - What follows the head is not HTTP: the caller passes it on as the
 *    terminal's first output (101) or reads it as the error body.
 */
#ifndef KILN_CLI_TTY_H
#define KILN_CLI_TTY_H

#include <stdbool.h>
#include <stddef.h>

#define CLI_TTY_PROTOCOL "kiln-tty"
/* kilnd's heads are a few hundred bytes; this is far above any of them. */
#define CLI_TTY_HEAD_MAX 16384
/* "\x1b]kiln;resize;65535;65535\x07" and its NUL. */
#define CLI_TTY_ESC_MAX 32

/* The upgrade request for path ("/v1/...", already encoded) into buf:
 * its length, or -ENAMETOOLONG when it does not fit. */
int cli_tty_request(char *buf, size_t n, const char *path);

struct cli_http_head {
	int status;               /* 100..599 */
	long long content_length; /* -1: none given */
	bool chunked;             /* Transfer-Encoding: chunked */
	bool upgrade;             /* Upgrade lists kiln-tty */
	size_t len;               /* bytes of the head, its blank line included */
};

/*
 * Parse a response head at the start of p[0..n). 1 when it is complete
 * (h filled, h->len its length), 0 when more bytes are needed, -1 when it
 * is not an HTTP/1.x response head (or longer than CLI_TTY_HEAD_MAX).
 */
int cli_http_head_parse(const char *p, size_t n, struct cli_http_head *h);

/*
 * The resize escape for a rows x cols terminal into buf (at least
 * CLI_TTY_ESC_MAX bytes); returns its length (NUL not counted). Sizes
 * are clamped to kilnd's 1..65535, so a 0x0 "terminal" (a pty that
 * reports no size) still yields a sequence kilnd applies, not one it
 * drops as input.
 */
size_t cli_tty_resize_escape(char *buf, unsigned rows, unsigned cols);

/*
 * What to send when our stdin (not a terminal) ends, for a process on a
 * PTY: a PTY cannot be half-closed, so EOF is the terminal's ^D, which
 * ends input only at the start of a line. A last line without its
 * newline gets one first: `printf 'ls' | kiln shell ID` runs ls and ends
 * (a shell reading a partial line at ^D would wait for more instead).
 * last is the last byte sent (-1: none). Returns the bytes written into
 * buf (1 or 2).
 */
size_t cli_tty_eof_bytes(int last, char *buf);

#endif

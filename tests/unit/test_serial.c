/*
 * serial: the 16550A as the Linux 8250 driver probes and uses it
 * (drivers/tty/serial/8250/8250_port.c autoconfig()). If any of these reads
 * come back wrong the guest decides there is no UART and the console is
 * silent. Input is bounded: a flood from the host must not grow anything.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/legacy/serial.h"

enum { RBR = 0, IER = 1, IIR = 2, FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };

struct fx {
	struct serial s;
	int changes; /* irq callback calls */
	int level;   /* last level the callback saw */
};

static void irq(void *ctx, int level)
{
	struct fx *f = ctx;

	f->changes++;
	f->level = level;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	serial_init(&f->s, -1, irq, f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	serial_destroy(&f->s);
	free(f);
	return 0;
}

static uint8_t in(struct fx *f, unsigned reg)
{
	uint8_t v = 0xa5;

	serial_io(&f->s, reg, &v, 1, 0);
	return v;
}

static void out(struct fx *f, unsigned reg, uint8_t v)
{
	serial_io(&f->s, reg, &v, 1, 1);
}

/* autoconfig(): IER has 4 writable bits; the upper ones read back 0. */
static void test_ier_mask(void **state)
{
	struct fx *f = *state;

	out(f, IER, 0xff);
	assert_int_equal(in(f, IER), 0x0f);
	out(f, IER, 0x00);
	assert_int_equal(in(f, IER), 0x00);
}

/* The scratch register keeps what was written (8250 vs 8250A test). */
static void test_scratch(void **state)
{
	struct fx *f = *state;

	out(f, SCR, 0x55);
	assert_int_equal(in(f, SCR), 0x55);
	out(f, SCR, 0xaa);
	assert_int_equal(in(f, SCR), 0xaa);
}

/* Loopback probe: MCR = LOOP | OUT2 | RTS must read MSR = DCD | CTS. */
static void test_loopback_msr(void **state)
{
	struct fx *f = *state;

	out(f, MCR, 0x1a);
	assert_int_equal(in(f, MSR) & 0xf0, 0x90);
	out(f, MCR, 0x1f); /* every modem output looped back */
	assert_int_equal(in(f, MSR) & 0xf0, 0xf0);
	out(f, MCR, 0x10);
	assert_int_equal(in(f, MSR) & 0xf0, 0x00);
	out(f, MCR, 0x08); /* loopback off: carrier, DSR and CTS present */
	assert_int_equal(in(f, MSR) & 0xf0, 0xb0);
}

/* In loopback, transmitted bytes come back on the receive side. */
static void test_loopback_data(void **state)
{
	struct fx *f = *state;

	out(f, MCR, 0x10);
	out(f, RBR, 'x');
	assert_int_equal(in(f, LSR) & 0x01, 0x01);
	assert_int_equal(in(f, RBR), 'x');
	assert_int_equal(in(f, LSR) & 0x01, 0x00);
}

/* FCR enable makes IIR report FIFOs (bits 7:6 = 11): a 16550A, not a 16450. */
static void test_fifo_iir(void **state)
{
	struct fx *f = *state;

	assert_int_equal(in(f, IIR), 0x01); /* no FIFO, no interrupt */
	out(f, FCR, 0x01);
	assert_int_equal(in(f, IIR) & 0xc0, 0xc0);
	assert_int_equal(in(f, IIR), 0xc1);
	out(f, FCR, 0x00);
	assert_int_equal(in(f, IIR) & 0xc0, 0x00);
}

/* With the console off (out_fd -1) the guest may still write. */
static void test_thr_console_off(void **state)
{
	struct fx *f = *state;

	for (int i = 0; i < 1000; i++)
		out(f, RBR, (uint8_t)i);
	assert_int_equal(in(f, LSR) & 0x60, 0x60); /* THRE | TEMT: always ready */
	assert_int_equal(in(f, LSR) & 0x01, 0x00); /* nothing echoed back */
}

/* With a console, THR bytes reach it in order. */
static void test_thr_to_console(void **state)
{
	struct fx *f = *state;
	int p[2];
	char got[8] = { 0 };

	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	f->s.out_fd = p[1];
	out(f, RBR, 'h');
	out(f, RBR, 'i');
	assert_int_equal(read(p[0], got, sizeof(got)), 2);
	assert_string_equal(got, "hi");
	close(p[0]);
	close(p[1]);
}

/* Enabling THRI raises the line; reading IIR acknowledges and lowers it;
 * each transmitted byte raises it again (the 8250 driver's TX path). */
static void test_thri(void **state)
{
	struct fx *f = *state;

	assert_int_equal(f->changes, 0);
	out(f, IER, 0x02);
	assert_int_equal(f->changes, 1);
	assert_int_equal(f->level, 1);
	assert_int_equal(in(f, IIR), 0x02);
	assert_int_equal(f->changes, 2);
	assert_int_equal(f->level, 0);
	assert_int_equal(in(f, IIR), 0x01); /* acknowledged: nothing pending */
	assert_int_equal(f->changes, 2);

	out(f, RBR, 'a');
	assert_int_equal(f->changes, 3);
	assert_int_equal(f->level, 1);
	assert_int_equal(in(f, IIR), 0x02);
	assert_int_equal(f->level, 0);

	/* Rewriting IER with THRI already on is not a new edge. */
	out(f, IER, 0x02);
	assert_int_equal(f->level, 0);
	assert_int_equal(in(f, IIR), 0x01);
	/* Disabling THRI with one pending lowers the line. */
	out(f, RBR, 'b');
	assert_int_equal(f->level, 1);
	out(f, IER, 0x00);
	assert_int_equal(f->level, 0);
	assert_int_equal(f->changes, 6);
}

/* No interrupts while IER is 0, whatever happens. */
static void test_no_irq_when_disabled(void **state)
{
	struct fx *f = *state;
	const uint8_t b = 'z';

	out(f, RBR, 'a');
	assert_int_equal(serial_input(&f->s, &b, 1), 1);
	assert_int_equal(f->changes, 0);
	assert_int_equal(in(f, IIR), 0x01);
}

/* Received data raises RDI; it outranks THRI in IIR; draining lowers it. */
static void test_rx_irq(void **state)
{
	struct fx *f = *state;
	const uint8_t data[2] = { 'o', 'k' };

	out(f, IER, 0x01);
	assert_int_equal(f->level, 0);
	assert_int_equal(serial_input(&f->s, data, 2), 2);
	assert_int_equal(f->level, 1);
	assert_int_equal(in(f, IIR), 0x04);
	assert_int_equal(in(f, IIR), 0x04); /* stays until the data is read */
	assert_int_equal(in(f, RBR), 'o');
	assert_int_equal(f->level, 1);
	assert_int_equal(in(f, RBR), 'k');
	assert_int_equal(f->level, 0);
	assert_int_equal(in(f, IIR), 0x01);
}

/* The FIFO holds SERIAL_RX_FIFO bytes; serial_input says how many it took,
 * and bytes come out in order across the ring's wrap. */
static void test_input_bounded(void **state)
{
	struct fx *f = *state;
	uint8_t data[SERIAL_RX_FIFO + 36];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	assert_int_equal(in(f, LSR) & 0x01, 0);
	assert_int_equal(serial_input(&f->s, data, sizeof(data)), SERIAL_RX_FIFO);
	assert_int_equal(serial_input(&f->s, data, 1), 0); /* full */
	assert_int_equal(in(f, LSR) & 0x01, 0x01);
	for (int i = 0; i < 10; i++)
		assert_int_equal(in(f, RBR), i);
	/* Room for 10 more: the caller's retry continues where it stopped. */
	assert_int_equal(serial_input(&f->s, data + SERIAL_RX_FIFO, 36), 10);
	for (int i = 10; i < SERIAL_RX_FIFO + 10; i++) {
		assert_int_equal(in(f, LSR) & 0x01, 0x01);
		assert_int_equal(in(f, RBR), i);
	}
	assert_int_equal(in(f, LSR) & 0x01, 0);
	assert_int_equal(in(f, RBR), 0); /* empty reads as 0 */
	assert_int_equal(serial_input(&f->s, data, 0), 0);
}

/* FCR "clear receive FIFO" drops queued input. */
static void test_fcr_clear_rx(void **state)
{
	struct fx *f = *state;
	const uint8_t data[3] = { 1, 2, 3 };

	assert_int_equal(serial_input(&f->s, data, 3), 3);
	out(f, FCR, 0x03);
	assert_int_equal(in(f, LSR) & 0x01, 0);
	assert_int_equal(serial_input(&f->s, data + 2, 1), 1);
	assert_int_equal(in(f, RBR), 3);
}

/* With DLAB set, offsets 0 and 1 are the divisor latch, not THR/IER/RBR. */
static void test_dlab(void **state)
{
	struct fx *f = *state;
	const uint8_t b = 'q';
	int p[2];
	char c;

	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	f->s.out_fd = p[1];
	assert_int_equal(serial_input(&f->s, &b, 1), 1);
	out(f, LCR, 0x83);
	out(f, RBR, 0x0c); /* divisor 12: 9600 baud */
	out(f, IER, 0x0f);
	assert_int_equal(in(f, RBR), 0x0c);
	assert_int_equal(in(f, IER), 0x0f);
	assert_int_equal(read(p[0], &c, 1), -1); /* nothing was transmitted */
	out(f, LCR, 0x03);
	assert_int_equal(in(f, LCR), 0x03);
	assert_int_equal(in(f, IER), 0x00); /* the real IER was not written */
	assert_int_equal(f->changes, 0);
	assert_int_equal(in(f, RBR), 'q'); /* the DLL read did not consume input */
	close(p[0]);
	close(p[1]);
}

/* A wide access covering the top registers stops at offset 7. */
static void test_wide_access(void **state)
{
	struct fx *f = *state;
	uint8_t v[4] = { 0x5a, 0x5a, 0x5a, 0x5a };

	out(f, SCR, 0x42);
	serial_io(&f->s, SCR, v, 4, 0);
	assert_int_equal(v[0], 0x42);
	assert_int_equal(v[1], 0x5a);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_ier_mask),       T(test_scratch),       T(test_loopback_msr),
		T(test_loopback_data),  T(test_fifo_iir),      T(test_thr_console_off),
		T(test_thr_to_console), T(test_thri),          T(test_no_irq_when_disabled),
		T(test_rx_irq),         T(test_input_bounded), T(test_fcr_clear_rx),
		T(test_dlab),           T(test_wide_access),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

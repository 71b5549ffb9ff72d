/*
 * serial: a 16550A UART at COM1 (port 0x3f8, IRQ 4), enough of it for the
 * Linux 8250 driver's probe, its console and interactive input.
 *
 * Transmitted bytes go to `out_fd` (the console; -1 discards them, so the
 * guest's probe still succeeds when the console is off). Received bytes
 * come from serial_input(). The interrupt line is raised and lowered
 * through `irq()`. Thread-safe: vCPU threads and the console input thread
 * may call in concurrently.
 */
#ifndef KILN_SERIAL_H
#define KILN_SERIAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SERIAL_COM1 0x3f8
#define SERIAL_COM1_IRQ 4
#define SERIAL_RX_FIFO 64

struct serial {
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, fcr, scr, dll, dlm;
	int thri_pending; /* "transmitter empty" interrupt not yet seen by the guest */
	uint8_t rx[SERIAL_RX_FIFO];
	unsigned rx_head, rx_count;
	int irq_level;
	int out_fd;
	void (*irq)(void *ctx, int level);
	void *irq_ctx;
};

void serial_init(struct serial *s, int out_fd, void (*irq)(void *ctx, int level), void *irq_ctx);
void serial_destroy(struct serial *s);

/* io_bus handler for the 8 registers at SERIAL_COM1. */
void serial_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);

/*
 * Queue received bytes; returns how many fit (the FIFO is bounded: the
 * caller keeps the rest and retries once the guest has read some).
 */
size_t serial_input(struct serial *s, const uint8_t *buf, size_t len);

#endif

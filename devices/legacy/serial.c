#include "devices/legacy/serial.h"

#include <string.h>
#include <unistd.h>

/* Register offsets and bits: National Semiconductor PC16550D datasheet. */
enum { RBR_THR = 0, IER = 1, IIR_FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };
#define IER_RDI 0x01
#define IER_THRI 0x02
#define IIR_NONE 0x01
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_FIFO 0xc0
#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define LCR_DLAB 0x80
#define MCR_LOOP 0x10
#define LSR_DR 0x01
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_DCD 0x80

void serial_init(struct serial *s, int out_fd, void (*irq)(void *ctx, int level), void *irq_ctx)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->out_fd = out_fd;
	s->irq = irq;
	s->irq_ctx = irq_ctx;
	s->mcr = 0x08; /* OUT2: interrupts routed */
}

void serial_destroy(struct serial *s)
{
	pthread_mutex_destroy(&s->lock);
}

static void update_irq(struct serial *s)
{
	int level = ((s->ier & IER_RDI) && s->rx_count) || ((s->ier & IER_THRI) && s->thri_pending);

	if (level != s->irq_level) {
		s->irq_level = level;
		if (s->irq)
			s->irq(s->irq_ctx, level);
	}
}

static void rx_push(struct serial *s, uint8_t b)
{
	if (s->rx_count < SERIAL_RX_FIFO) {
		s->rx[(s->rx_head + s->rx_count) % SERIAL_RX_FIFO] = b;
		s->rx_count++;
	}
}

static uint8_t rx_pop(struct serial *s)
{
	uint8_t b;

	if (!s->rx_count)
		return 0;
	b = s->rx[s->rx_head];
	s->rx_head = (s->rx_head + 1) % SERIAL_RX_FIFO;
	s->rx_count--;
	return b;
}

static void transmit(struct serial *s, uint8_t b)
{
	if (s->mcr & MCR_LOOP) {
		rx_push(s, b);
	} else if (s->out_fd >= 0) {
		/* A console that went away must not stop the guest. */
		if (write(s->out_fd, &b, 1) < 0)
			s->out_fd = -1;
	}
	/* Sent at once: the holding register is empty again, which the
	 * guest learns from a fresh edge on the interrupt line. */
	s->thri_pending = 0;
	update_irq(s);
	s->thri_pending = 1;
}

static uint8_t reg_read(struct serial *s, unsigned reg)
{
	uint8_t v;

	switch (reg) {
	case RBR_THR:
		return (s->lcr & LCR_DLAB) ? s->dll : rx_pop(s);
	case IER:
		return (s->lcr & LCR_DLAB) ? s->dlm : s->ier;
	case IIR_FCR:
		v = (s->fcr & FCR_ENABLE) ? IIR_FIFO : 0;
		if ((s->ier & IER_RDI) && s->rx_count)
			return v | IIR_RDI;
		if ((s->ier & IER_THRI) && s->thri_pending) {
			s->thri_pending = 0; /* reading IIR acknowledges THRE */
			return v | IIR_THRI;
		}
		return v | IIR_NONE;
	case LCR:
		return s->lcr;
	case MCR:
		return s->mcr;
	case LSR:
		return LSR_THRE | LSR_TEMT | (s->rx_count ? LSR_DR : 0);
	case MSR:
		if (s->mcr & MCR_LOOP) /* loopback wires the modem outputs back in */
			return (uint8_t)(((s->mcr & 0x02) << 3) | ((s->mcr & 0x01) << 5) |
					 ((s->mcr & 0x04) << 4) | ((s->mcr & 0x08) << 4));
		return MSR_DCD | MSR_DSR | MSR_CTS;
	default:
		return s->scr;
	}
}

static void reg_write(struct serial *s, unsigned reg, uint8_t v)
{
	switch (reg) {
	case RBR_THR:
		if (s->lcr & LCR_DLAB)
			s->dll = v;
		else
			transmit(s, v);
		break;
	case IER:
		if (s->lcr & LCR_DLAB) {
			s->dlm = v;
		} else {
			if ((v & IER_THRI) && !(s->ier & IER_THRI))
				s->thri_pending = 1;
			s->ier = v & 0x0f;
		}
		break;
	case IIR_FCR:
		s->fcr = v & 0xc9;
		if (v & FCR_CLEAR_RX)
			s->rx_head = s->rx_count = 0;
		break;
	case LCR:
		s->lcr = v;
		break;
	case MCR:
		s->mcr = v & 0x1f;
		break;
	case SCR:
		s->scr = v;
		break;
	default: /* LSR and MSR are read-only */
		break;
	}
}

void serial_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < size && off + i < 8; i++) {
		if (is_write)
			reg_write(s, (unsigned)(off + i), data[i]);
		else
			data[i] = reg_read(s, (unsigned)(off + i));
	}
	update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

size_t serial_input(struct serial *s, const uint8_t *buf, size_t len)
{
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	while (n < len && s->rx_count < SERIAL_RX_FIFO)
		rx_push(s, buf[n++]);
	update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

#include "devices/virtio/virtio_dev.h"

#include <stdarg.h>
#include <stdio.h>

void virtio_dev_interrupt(struct virtio_dev *d, int q)
{
	if (q >= 0 && q < VIRTIO_MAX_QUEUES)
		virtio_dev_interrupt_queues(d, 1u << q);
}

void virtio_dev_interrupt_queues(struct virtio_dev *d, uint32_t qmask)
{
	int need = 0;

	/* Every queue is asked: virtq_need_interrupt moves its "signalled" mark. */
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++) {
		if ((qmask >> q) & 1)
			need |= virtq_need_interrupt(&d->vq[q]);
	}
	if (!need)
		return;
	__atomic_or_fetch(&d->isr, 1, __ATOMIC_SEQ_CST);
	if (d->raise_irq)
		d->raise_irq(d->irq_ctx);
}

void virtio_dev_fail(struct virtio_dev *d, const char *why)
{
	if (d->broken)
		return;
	d->broken = 1;
	/* 2.1.1: NEEDS_RESET plus a configuration change notification. */
	d->status |= VIRTIO_STATUS_NEEDS_RESET;
	__atomic_or_fetch(&d->isr, 2, __ATOMIC_SEQ_CST);
	virtio_dev_log(d, "%s: guest driver error: %s; device needs reset",
		       d->ops && d->ops->name ? d->ops->name : "virtio", why);
	if (d->raise_irq)
		d->raise_irq(d->irq_ctx);
}

void virtio_dev_log(struct virtio_dev *d, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!d->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	d->log(d->log_ctx, line);
}

#include "devices/virtio/virtio_mmio.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/guest/event_loop.h"

#define TRANSPORT_FEATURES                                                  \
	((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_F_RING_EVENT_IDX) | \
	 (1ULL << VIRTIO_F_RING_INDIRECT_DESC))

static void mmio_raise(void *ctx)
{
	struct virtio_mmio *m = ctx;
	uint64_t one = 1;

	if (m->irqfd >= 0 && write(m->irqfd, &one, sizeof(one)) < 0) {
		/* an eventfd counter only fails to overflow after 2^64 - 1 raises */
	}
}

void virtio_mmio_init(struct virtio_mmio *m, struct virtio_dev *dev, const struct guest_mem *mem,
		      uint64_t base, uint32_t gsi)
{
	memset(m, 0, sizeof(*m));
	m->dev = dev;
	m->base = base;
	m->gsi = gsi;
	m->irqfd = -1;
	m->vm_fd = -1;
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++)
		m->kick_fd[i] = -1;
	dev->mem = mem;
	dev->device_features = (dev->ops->features ? dev->ops->features(dev) : 0) |
		TRANSPORT_FEATURES;
	if (!dev->raise_irq) {
		dev->raise_irq = mmio_raise;
		dev->irq_ctx = m;
	}
}

static struct virtq *sel_queue(struct virtio_mmio *m)
{
	/* The driver may select any number; only real queues are reachable. */
	if (m->queue_sel >= (uint32_t)m->dev->ops->num_queues || m->queue_sel >= VIRTIO_MAX_QUEUES)
		return NULL;
	return &m->dev->vq[m->queue_sel];
}

static void device_reset(struct virtio_dev *d)
{
	if (d->ops->reset)
		d->ops->reset(d);
	d->status = 0;
	d->isr = 0;
	d->driver_features = 0;
	d->broken = 0;
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++)
		memset(&d->vq[i], 0, sizeof(d->vq[i]));
}

static void kick(struct virtio_dev *d, uint32_t q)
{
	if (q >= (uint32_t)d->ops->num_queues || q >= VIRTIO_MAX_QUEUES || !d->vq[q].ready ||
	    d->broken || !(d->status & VIRTIO_STATUS_DRIVER_OK))
		return;
	if (d->ops->notify)
		d->ops->notify(d, (int)q);
}

static void set_status(struct virtio_mmio *m, uint32_t v)
{
	struct virtio_dev *d = m->dev;
	uint32_t added = v & ~d->status;

	if (v == 0) {
		device_reset(d);
		return;
	}
	if (added & VIRTIO_STATUS_FEATURES_OK) {
		/* 3.1.1: the device refuses features it did not offer, and kiln is
		 * a modern-only device: VERSION_1 is mandatory. */
		if ((d->driver_features & ~d->device_features) ||
		    !virtio_has(d, VIRTIO_F_VERSION_1))
			v &= ~(uint32_t)VIRTIO_STATUS_FEATURES_OK;
	}
	if ((added & VIRTIO_STATUS_DRIVER_OK) && !(v & VIRTIO_STATUS_FEATURES_OK))
		v &= ~(uint32_t)VIRTIO_STATUS_DRIVER_OK;
	/*
	 * 2.1.2: only a reset (writing 0) clears status bits. Keeping them
	 * stops a driver that drops FEATURES_OK under a live device from
	 * unfreezing the features and renegotiating them behind DRIVER_OK.
	 */
	d->status = v | d->status;
	if ((added & VIRTIO_STATUS_DRIVER_OK) && (d->status & VIRTIO_STATUS_DRIVER_OK) &&
	    d->ops->activate && d->ops->activate(d) < 0)
		virtio_dev_fail(d, "device could not start");
}

static void set_addr(struct virtq *q, uint64_t *field, uint32_t v, int high)
{
	if (q->ready)
		return; /* 4.2.2.2: only while the queue is not ready */
	if (high)
		*field = (*field & 0xffffffffULL) | ((uint64_t)v << 32);
	else
		*field = (*field & ~0xffffffffULL) | v;
}

static uint32_t reg_read(struct virtio_mmio *m, uint64_t off)
{
	struct virtio_dev *d = m->dev;
	struct virtq *q = sel_queue(m);

	switch (off) {
	case VMMIO_MAGIC:
		return VIRTIO_MMIO_MAGIC;
	case VMMIO_VERSION:
		return 2;
	case VMMIO_DEVICE_ID:
		return d->ops->device_id;
	case VMMIO_VENDOR_ID:
		return VIRTIO_MMIO_VENDOR;
	case VMMIO_DEVICE_FEATURES:
		return m->dev_feat_sel < 2
			? (uint32_t)(d->device_features >> (32 * m->dev_feat_sel))
			: 0;
	case VMMIO_QUEUE_NUM_MAX:
		return q ? d->ops->queue_max : 0;
	case VMMIO_QUEUE_READY:
		return q ? (uint32_t)q->ready : 0;
	case VMMIO_INTERRUPT_STATUS:
		return __atomic_load_n(&d->isr, __ATOMIC_SEQ_CST);
	case VMMIO_STATUS:
		return d->status;
	case VMMIO_CONFIG_GENERATION:
		return d->config_generation;
	case 0x0b0: /* SHMLenLow */
	case 0x0b4: /* SHMLenHigh: no shared memory regions, length -1 (4.2.2) */
		return 0xffffffff;
	default:
		return 0;
	}
}

static void reg_write(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	struct virtio_dev *d = m->dev;
	struct virtq *q = sel_queue(m);

	switch (off) {
	case VMMIO_DEVICE_FEATURES_SEL:
		m->dev_feat_sel = v;
		break;
	case VMMIO_DRIVER_FEATURES:
		/* Features are fixed once FEATURES_OK is set (3.1.1). */
		if (m->drv_feat_sel < 2 && !(d->status & VIRTIO_STATUS_FEATURES_OK)) {
			int sh = 32 * (int)m->drv_feat_sel;

			d->driver_features = (d->driver_features & ~(0xffffffffULL << sh)) |
				((uint64_t)v << sh);
		}
		break;
	case VMMIO_DRIVER_FEATURES_SEL:
		m->drv_feat_sel = v;
		break;
	case VMMIO_QUEUE_SEL:
		m->queue_sel = v;
		break;
	case VMMIO_QUEUE_NUM:
		if (q && !q->ready)
			q->size = v > 0xffff ? 0 : (uint16_t)v;
		break;
	case VMMIO_QUEUE_READY:
		if (!q)
			break;
		if (v == 1 && !q->ready) {
			if (q->size > d->ops->queue_max || virtq_enable(q, d->mem) < 0) {
				virtio_dev_fail(
					d,
					"queue set up with a bad size or rings outside guest RAM");
				break;
			}
			q->event_idx = virtio_has(d, VIRTIO_F_RING_EVENT_IDX);
		} else if (v == 0) {
			q->ready = 0;
		}
		break;
	case VMMIO_QUEUE_NOTIFY:
		kick(d, v);
		break;
	case VMMIO_INTERRUPT_ACK:
		__atomic_and_fetch(&d->isr, ~v, __ATOMIC_SEQ_CST);
		break;
	case VMMIO_STATUS:
		set_status(m, v);
		break;
	case VMMIO_QUEUE_DESC_LOW:
	case VMMIO_QUEUE_DESC_HIGH:
		if (q)
			set_addr(q, &q->desc_gpa, v, off == VMMIO_QUEUE_DESC_HIGH);
		break;
	case VMMIO_QUEUE_DRIVER_LOW:
	case VMMIO_QUEUE_DRIVER_HIGH:
		if (q)
			set_addr(q, &q->avail_gpa, v, off == VMMIO_QUEUE_DRIVER_HIGH);
		break;
	case VMMIO_QUEUE_DEVICE_LOW:
	case VMMIO_QUEUE_DEVICE_HIGH:
		if (q)
			set_addr(q, &q->used_gpa, v, off == VMMIO_QUEUE_DEVICE_HIGH);
		break;
	default:
		break; /* read-only or unknown register: ignored */
	}
}

void virtio_mmio_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	struct virtio_mmio *m = opaque;
	struct virtio_dev *d = m->dev;

	pthread_mutex_lock(&d->lock);
	if (off >= VMMIO_CONFIG) {
		uint64_t coff = off - VMMIO_CONFIG;

		/* Config space: any access size, never past the device's config. */
		if (coff >= d->ops->config_len || size > d->ops->config_len - coff) {
			if (!is_write)
				memset(data, 0, size);
		} else if (is_write) {
			if (d->ops->write_config)
				d->ops->write_config(d, (uint32_t)coff, data, size);
		} else if (d->ops->read_config) {
			d->ops->read_config(d, (uint32_t)coff, data, size);
		} else {
			memset(data, 0, size);
		}
	} else if (size != 4 || off % 4) {
		/* 4.2.2.1: registers are 32-bit, naturally aligned. */
		if (!is_write)
			memset(data, 0, size);
	} else if (is_write) {
		uint32_t v;

		memcpy(&v, data, 4);
		reg_write(m, off, v);
	} else {
		uint32_t v = reg_read(m, off);

		memcpy(data, &v, 4);
	}
	pthread_mutex_unlock(&d->lock);
}

static void kick_ready(void *ctx, int fd, uint32_t events)
{
	struct virtio_mmio *m = ctx;
	uint64_t n;

	(void)events;
	if (read(fd, &n, sizeof(n)) < 0)
		return;
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++) {
		if (m->kick_fd[q] == fd) {
			pthread_mutex_lock(&m->dev->lock);
			kick(m->dev, (uint32_t)q);
			pthread_mutex_unlock(&m->dev->lock);
		}
	}
}

int virtio_mmio_attach_kvm(struct virtio_mmio *m, int vm_fd, struct event_loop *loop)
{
	struct kvm_irqfd irqfd = { 0 };
	int err;

	m->vm_fd = vm_fd;
	m->loop = loop;
	m->irqfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->irqfd < 0)
		return -errno;
	irqfd.fd = (uint32_t)m->irqfd;
	irqfd.gsi = m->gsi;
	if (ioctl(vm_fd, KVM_IRQFD, &irqfd) < 0)
		return -errno;
	for (int q = 0; q < m->dev->ops->num_queues && q < VIRTIO_MAX_QUEUES; q++) {
		struct kvm_ioeventfd io = { 0 };

		m->kick_fd[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (m->kick_fd[q] < 0)
			return -errno;
		/* A write of value q to QueueNotify wakes this eventfd in-kernel,
		 * without an exit to userspace. */
		io.addr = m->base + VMMIO_QUEUE_NOTIFY;
		io.len = 4;
		io.datamatch = (uint64_t)q;
		io.fd = m->kick_fd[q];
		io.flags = KVM_IOEVENTFD_FLAG_DATAMATCH;
		if (ioctl(vm_fd, KVM_IOEVENTFD, &io) < 0)
			return -errno;
		if ((err = event_loop_add(loop, m->kick_fd[q], EPOLLIN, kick_ready, m)))
			return err;
	}
	return 0;
}

void virtio_mmio_detach(struct virtio_mmio *m)
{
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++) {
		if (m->kick_fd[q] < 0)
			continue;
		if (m->loop)
			event_loop_del(m->loop, m->kick_fd[q]);
		close(m->kick_fd[q]);
		m->kick_fd[q] = -1;
	}
	if (m->irqfd >= 0)
		close(m->irqfd);
	m->irqfd = -1;
}

void virtio_mmio_save(const struct virtio_mmio *m, struct virtio_mmio_state *s)
{
	const struct virtio_dev *d = m->dev;

	memset(s, 0, sizeof(*s));
	s->version = VIRTIO_MMIO_STATE_VERSION;
	s->status = d->status;
	s->isr = d->isr;
	s->config_generation = d->config_generation;
	s->dev_feat_sel = m->dev_feat_sel;
	s->drv_feat_sel = m->drv_feat_sel;
	s->queue_sel = m->queue_sel;
	s->driver_features = d->driver_features;
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		const struct virtq *q = &d->vq[i];

		s->q[i].size = q->size;
		s->q[i].last_avail = q->last_avail;
		s->q[i].used_idx = q->used_idx;
		s->q[i].signalled_used = q->signalled_used;
		s->q[i].ready = (uint8_t)q->ready;
		s->q[i].event_idx = (uint8_t)q->event_idx;
		s->q[i].signalled_valid = (uint8_t)q->signalled_valid;
		s->q[i].desc = q->desc_gpa;
		s->q[i].avail = q->avail_gpa;
		s->q[i].used = q->used_gpa;
	}
}

int virtio_mmio_restore(struct virtio_mmio *m, const struct virtio_mmio_state *s)
{
	struct virtio_dev *d = m->dev;

	if (s->version != VIRTIO_MMIO_STATE_VERSION)
		return -EINVAL;
	if (s->driver_features & ~d->device_features)
		return -EINVAL;
	/* A state no live device can be in (a damaged or hand-made file; found
	 * by fuzz_virtio_mmio): ISR bits beyond used buffer / config change,
	 * DRIVER_OK without FEATURES_OK, FEATURES_OK without VERSION_1 (3.1.1).
	 * Restoring it would show the guest a device the transport never
	 * lets exist. */
	if ((s->isr & ~3u) ||
	    ((s->status & VIRTIO_STATUS_DRIVER_OK) && !(s->status & VIRTIO_STATUS_FEATURES_OK)) ||
	    ((s->status & VIRTIO_STATUS_FEATURES_OK) &&
	     !((s->driver_features >> VIRTIO_F_VERSION_1) & 1)))
		return -EINVAL;
	/* Check every queue before changing anything: a refused state leaves
	 * the device as it was. */
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		struct virtq t = { .size = s->q[i].size,
				   .desc_gpa = s->q[i].desc,
				   .avail_gpa = s->q[i].avail,
				   .used_gpa = s->q[i].used };

		if (s->q[i].ready &&
		    (i >= d->ops->num_queues || t.size > d->ops->queue_max ||
		     virtq_enable(&t, d->mem) < 0))
			return -EINVAL;
	}
	for (int i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		struct virtq *q = &d->vq[i];

		memset(q, 0, sizeof(*q));
		q->size = s->q[i].size;
		q->desc_gpa = s->q[i].desc;
		q->avail_gpa = s->q[i].avail;
		q->used_gpa = s->q[i].used;
		if (s->q[i].ready) {
			if (i >= d->ops->num_queues || q->size > d->ops->queue_max ||
			    virtq_enable(q, d->mem) < 0)
				return -EINVAL;
			q->last_avail = s->q[i].last_avail;
			q->used_idx = s->q[i].used_idx;
			q->signalled_used = s->q[i].signalled_used;
			q->signalled_valid = s->q[i].signalled_valid;
			q->event_idx = s->q[i].event_idx;
		}
	}
	d->status = s->status;
	d->broken = !!(s->status & VIRTIO_STATUS_NEEDS_RESET);
	d->isr = s->isr;
	d->config_generation = s->config_generation;
	d->driver_features = s->driver_features;
	m->dev_feat_sel = s->dev_feat_sel;
	m->drv_feat_sel = s->drv_feat_sel;
	m->queue_sel = s->queue_sel;
	return 0;
}

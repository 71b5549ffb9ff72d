#include "devices/rng/virtio_rng.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

static uint64_t rng_features(struct virtio_dev *d)
{
	(void)d;
	return 0;
}

static void rng_notify(struct virtio_dev *d, int qi)
{
	struct virtq *q = &d->vq[qi];
	struct virtq_chain c;
	int r, pushed = 0;

	while ((r = virtq_pop_or_arm(q, &c)) > 0) {
		uint32_t done = 0;

		for (int i = 0; i < c.nin && done < VIRTIO_RNG_MAX_PER_REQUEST; i++) {
			uint32_t want = c.in[i].len;

			if (want > VIRTIO_RNG_MAX_PER_REQUEST - done)
				want = VIRTIO_RNG_MAX_PER_REQUEST - done;
			ssize_t n = getrandom(c.in[i].host, want, 0);

			if (n <= 0)
				break;
			done += (uint32_t)n;
			if ((uint32_t)n < want)
				break;
		}
		if (virtq_push(q, c.head, done) < 0) {
			virtio_dev_fail(d, "used ring unusable");
			return;
		}
		pushed = 1;
	}
	if (r < 0)
		virtio_dev_fail(d, "malformed descriptor chain on the request queue");
	if (pushed)
		virtio_dev_interrupt(d, qi);
}

static void rng_destroy(struct virtio_dev *d)
{
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static const struct virtio_dev_ops rng_ops = {
	.name = "virtio-rng",
	.device_id = VIRTIO_ID_RNG,
	.num_queues = 1,
	.queue_max = 64,
	.features = rng_features,
	.notify = rng_notify,
	.destroy = rng_destroy,
};

int virtio_rng_create(struct virtio_dev **out, struct err *e)
{
	struct virtio_dev *d = calloc(1, sizeof(*d));

	if (!d)
		return err_set(e, ENOMEM, "out of memory");
	d->ops = &rng_ops;
	pthread_mutex_init(&d->lock, NULL);
	*out = d;
	return 0;
}

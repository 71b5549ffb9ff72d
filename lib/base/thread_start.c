#include "lib/base/thread_start.h"

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	int err = pthread_attr_init(&a);

	if (err)
		return err;
	if (!(err = pthread_attr_setstacksize(&a, THREAD_STACK_BYTES)))
		err = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return err;
}

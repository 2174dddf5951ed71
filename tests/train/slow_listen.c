/* tests/train/slow_listen.c: an LD_PRELOAD shim for test_train_listen.py. listen() waits 300 ms
 * before it runs, so that a server whose socket file is visible before it listens is caught: a
 * client that connects as soon as the file appears would be refused. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <sys/socket.h>
#include <time.h>

int listen(int fd, int backlog)
{
    int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
    struct timespec wait = {0, 300L * 1000 * 1000};
    nanosleep(&wait, NULL);
    return real ? real(fd, backlog) : -1;
}

/*
 * The sandbox ("pause") process of the one-node test cluster (hack/node_cluster.py).
 *
 * containerd starts one per pod to hold the pod's namespaces. It does nothing but wait:
 * it exits on SIGINT or SIGTERM and reaps any child that is re-parented to it. Built
 * statically by hack/node_cluster.py into an image of one file, so the cluster needs no
 * registry.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signo) {
    (void)signo;
    _exit(0);
}

static void reap(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction quit = {.sa_handler = stop};
    struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGINT, &quit, NULL);
    sigaction(SIGTERM, &quit, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;) {
        pause();
    }
}

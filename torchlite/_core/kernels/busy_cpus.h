/* How many CPUs other processes keep busy right now, so that a parallel region does not
 * wait for a thread that shares its core with another program.
 *
 * OpenMP's fork-join regions run only as fast as their slowest thread: with one core taken
 * by another process, the thread placed there gets a fraction of it, and every region waits
 * for it (a small model's training step ran 3.5x slower here with one core busy).  Sleeping
 * instead of spinning (OMP_WAIT_POLICY=passive) fixes that but makes every region pay a
 * wake-up, 55% slower on the same model when the machine is idle.  So torchlite keeps
 * OpenMP's default wait and sizes its regions to the cores that are free.
 *
 * Linux: the machine's runnable tasks (the fourth field of /proc/loadavg, "running/total")
 * less this process's own running threads (state R in /proc/self/task/<tid>/stat).  The
 * count is only meaningful when this process may run on every online CPU (a process pinned
 * to a few CPUs of a big machine, or a container that sees the host's /proc/loadavg, gets
 * no adaptation).  Elsewhere: unknown, and no adaptation.
 *
 * tl_free_cpus() is what the kernels ask (through parallel.pyx's max_threads): the online CPUs
 * not busy elsewhere, or -1 when unknown; it reads /proc at most every 200 ms (about 30 us a
 * read), so a loop of parallel ops pays nothing measurable for it. */
#ifndef TL_BUSY_CPUS_H
#define TL_BUSY_CPUS_H
#if defined(__linux__)
#include <dirent.h>
#include <stdio.h>
#include <string.h>

static int tl_running_tasks_elsewhere(void) {
    FILE* f = fopen("/proc/loadavg", "r");
    if (f == NULL) return -1;
    double l1, l5, l15;
    int running = 0, total = 0;
    const int ok = fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) == 5;
    fclose(f);
    if (!ok) return -1;
    DIR* d = opendir("/proc/self/task");
    if (d == NULL) return -1;
    int mine = 0;
    char path[96], buf[256];
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%.40s/stat", e->d_name);
        FILE* t = fopen(path, "r");
        if (t == NULL) continue;                 /* the thread has just exited */
        const size_t n = fread(buf, 1, sizeof buf - 1, t);
        fclose(t);
        buf[n] = '\0';
        const char* p = strrchr(buf, ')');       /* the name in (...) may hold anything */
        if (p != NULL && p[1] == ' ' && p[2] == 'R') mine++;
    }
    closedir(d);
    return running > mine ? running - mine : 0;
}
#include <sched.h>
#include <time.h>
#include <unistd.h>

static int tl_free_cpus(void) {
    /* the last answer, and when to look again (races between threads only cost a second look) */
    static volatile double next_look = 0.0;
    static volatile int free_cpus = -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (now < next_look) return free_cpus;
    next_look = now + 0.2;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mask;
    int answer = -1;
    if (online >= 1 && sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) == online) {
        const int busy = tl_running_tasks_elsewhere();
        if (busy >= 0) answer = busy < online ? (int)online - busy : 1;
    }
    free_cpus = answer;
    return answer;
}
#else
static int tl_free_cpus(void) { return -1; }
#endif
#endif

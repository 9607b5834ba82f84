/* How many CPUs other processes keep busy, so that a parallel region does not wait for a
 * thread that shares its core with another program.
 *
 * OpenMP's fork-join regions run only as fast as their slowest thread: with one core taken
 * by another process, the thread placed there gets a fraction of it, and every region waits
 * for it (a small model's training step ran 3.5x slower here with one core busy).  Sleeping
 * instead of spinning (OMP_WAIT_POLICY=passive) fixes that but makes every region pay a
 * wake-up, 55% slower on the same model when the machine is idle.  So torchlite keeps
 * OpenMP's default wait and sizes its regions to the cores that are free.
 *
 * Linux: the CPU time the whole machine spent working (/proc/stat's first line: user, nice,
 * system, irq, softirq) less this process's own (getrusage), over the last 0.2 to 0.5 s,
 * rounded to whole CPUs, and no more than the tasks of other processes runnable at the moment
 * of the look (/proc/loadavg's "running" less this process's threads in state R, the least of
 * three looks): the window says they keep a core busy, the moment that they still do; and
 * two windows in a row must say so.  A window in which this process worked less than half
 * the time, or that began more than 0.5 s ago, gives all cores until the next look.  An average over a window, not a look at one instant: a kernel
 * worker that runs for a moment does not count, a program that keeps a core busy does.  The
 * count is only meaningful when this process may run on every online CPU (a process pinned
 * to a few CPUs of a big machine, or a container that sees the host's /proc/stat, gets no
 * adaptation).  Elsewhere: unknown, and no adaptation.
 *
 * tl_free_cpus() is what the kernels ask (through parallel.pyx's max_threads): the online CPUs
 * not busy elsewhere, or -1 when unknown.  It reads /proc/stat at most every 0.2 s (a few
 * microseconds), so a loop of parallel ops pays nothing measurable for it. */
#ifndef TL_BUSY_CPUS_H
#define TL_BUSY_CPUS_H
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* sched_getaffinity, CPU_COUNT (Python.h defines it too) */
#endif
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* seconds of CPU time the machine has spent working since boot, -1 when unreadable */
static double tl_machine_busy_seconds(void) {
    FILE* f = fopen("/proc/stat", "r");
    if (f == NULL) return -1.0;
    unsigned long long user, nice, system, idle, iowait, irq, softirq;
    const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu",
                         &user, &nice, &system, &idle, &iowait, &irq, &softirq);
    fclose(f);
    const long hz = sysconf(_SC_CLK_TCK);
    if (n != 7 || hz <= 0) return -1.0;
    return (double)(user + nice + system + irq + softirq) / (double)hz;
}

static double tl_own_cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1.0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec
         + (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* this process's threads in state R (running or runnable), -1 when /proc cannot tell */
static int tl_own_running_threads(void) {
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
    return mine;
}

/* the machine's runnable tasks now (/proc/loadavg's "running/total"), -1 when unreadable */
static int tl_machine_running_tasks(void) {
    FILE* f = fopen("/proc/loadavg", "r");
    if (f == NULL) return -1;
    double l1, l5, l15;
    int running = 0, total = 0;
    const int ok = fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) == 5;
    fclose(f);
    return ok ? running : -1;
}

/* Runnable tasks now that are not this process's: the least of three quick looks, each
 * taking the larger of this process's counts before and after the machine's (a thread of ours
 * that starts or stops spinning between two reads must not pass for another process). */
static int tl_running_elsewhere_now(void) {
    int least = -1;
    for (int look = 0; look < 3 && least != 0; look++) {
        const int before = tl_own_running_threads();
        const int running = tl_machine_running_tasks();
        const int after = tl_own_running_threads();
        if (before < 0 || running < 0 || after < 0) return -1;
        const int mine = before > after ? before : after;
        const int others = running > mine ? running - mine : 0;
        if (least < 0 || others < least) least = others;
    }
    return least;
}

static int tl_free_cpus(void) {
    /* the last look and its answer (races between threads only cost a second look) */
    static volatile double last_wall = -1.0, last_busy = 0.0, last_own = 0.0;
    static volatile int free_cpus = -1;
    static volatile long taken_before = 0;    /* what the previous window saw taken */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (last_wall >= 0.0 && now - last_wall < 0.2) return free_cpus;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mask;
    const double busy = tl_machine_busy_seconds(), own = tl_own_cpu_seconds();
    if (online < 1 || busy < 0.0 || own < 0.0 || sched_getaffinity(0, sizeof mask, &mask) != 0
            || CPU_COUNT(&mask) != online) {
        last_wall = now;
        free_cpus = -1;
        return -1;
    }
    int answer = -1;
    /* a window that began long ago would speak of a past this process spent elsewhere (a
     * pause, or another program's burst since gone): start a new one, all cores meanwhile */
    /* and a window in which this process mostly waited says nothing of whether others
     * compete with its work (they may have run while it waited for them) */
    const double wall = now - last_wall;
    if (last_wall >= 0.0 && wall <= 0.5 && own - last_own >= 0.5 * wall) {
        const double others = ((busy - last_busy) - (own - last_own)) / wall;
        long taken = others > 0.0 ? (long)(others + 0.5) : 0;
        if (taken > 0) {
            /* and are they at it now?  (the window may hold a burst that ran while this
             * process waited, as another library does between a benchmark's samples) */
            const int now_elsewhere = tl_running_elsewhere_now();
            if (now_elsewhere >= 0 && now_elsewhere < taken) taken = now_elsewhere;
        }
        /* and two windows in a row must agree: a burst of another program between two of
         * this one's (a benchmark's other library, a compiler run) passes, a steady load
         * shows up within 0.4 s */
        const long seen = taken;
        if (taken > taken_before) taken = taken_before;
        taken_before = seen;
        answer = taken < online ? (int)(online - taken) : 1;
    }
    if (answer < 0) taken_before = 0;
    last_wall = now;
    last_busy = busy;
    last_own = own;
    free_cpus = answer;
    return answer;
}
#else
static int tl_free_cpus(void) { return -1; }
#endif
#endif

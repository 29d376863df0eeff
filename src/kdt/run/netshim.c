#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>

/* kdt run: pod and service names resolve to per-pod loopback addresses, and "localhost" to the pod's
   own; a pod's wildcard binds go to its own address; gethostname/uname give the pod's hostname. Table: KDT_RUN_HOSTS
   (a file of "ip name..." lines); the pod: KDT_RUN_POD_IP, KDT_RUN_HOSTNAME. */

#define MAXN 4096
static char *names[MAXN]; static struct in_addr addrs[MAXN]; static int n = -1;
/* The table is read again when its file is replaced (a live run rewrites it as pods come and go: `kdt run
   --live`, kdt/live/node.py); lookups from several threads take the lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ino_t seen_ino; static struct timespec seen_mtime;

static void load(void) {      /* with mu held */
    const char *path = getenv("KDT_RUN_HOSTS");
    struct stat st;
    if (!path || stat(path, &st) != 0) { if (n < 0) n = 0; return; }
    if (n >= 0 && st.st_ino == seen_ino && st.st_mtim.tv_sec == seen_mtime.tv_sec
        && st.st_mtim.tv_nsec == seen_mtime.tv_nsec) return;
    FILE *f = fopen(path, "r");
    if (!f) { if (n < 0) n = 0; return; }
    for (int i = 0; i < n; i++) free(names[i]);
    n = 0;
    seen_ino = st.st_ino; seen_mtime = st.st_mtim;
    char line[8192];
    while (fgets(line, sizeof line, f) && n < MAXN) {
        char *save = NULL, *ip = strtok_r(line, " \t\r\n", &save);
        struct in_addr a;
        if (!ip || ip[0] == '#' || inet_pton(AF_INET, ip, &a) != 1) continue;
        for (char *nm = strtok_r(NULL, " \t\r\n", &save); nm && n < MAXN; nm = strtok_r(NULL, " \t\r\n", &save)) {
            names[n] = strdup(nm); addrs[n] = a; n++;
        }
    }
    fclose(f);
}

static int pod_addr(struct in_addr *out);

static int lookup(const char *name, struct in_addr *out) {
    if (!name) return 0;
    /* A pod's loopback is its own: "localhost" is where its wildcard binds landed (torchrun --standalone
       serves its rendezvous store at localhost). */
    if (strcasecmp(name, "localhost") == 0) return pod_addr(out);
    size_t len = strlen(name);
    char buf[1024];
    if (len && len < sizeof buf && name[len - 1] == '.') { memcpy(buf, name, len - 1); buf[len - 1] = 0; name = buf; }
    int found = 0;
    pthread_mutex_lock(&mu);
    load();
    for (int i = 0; i < n; i++) if (strcasecmp(names[i], name) == 0) { *out = addrs[i]; found = 1; break; }
    pthread_mutex_unlock(&mu);
    return found;
}

typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    static gai_fn real = NULL;
    if (!real) real = (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    struct in_addr a;
    if (lookup(node, &a)) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a, ip, sizeof ip);
        struct addrinfo h;
        if (hints) h = *hints; else memset(&h, 0, sizeof h);
        int fam = h.ai_family;
        if (fam == AF_INET6) { /* the pod has an IPv4 loopback address: answer as v4-mapped */
            char v6[64]; snprintf(v6, sizeof v6, "::ffff:%s", ip);
            h.ai_flags |= AI_NUMERICHOST; h.ai_flags &= ~AI_CANONNAME;
            return real(v6, service, &h, res);
        }
        h.ai_family = AF_INET;
        h.ai_flags |= AI_NUMERICHOST; h.ai_flags &= ~(AI_CANONNAME | AI_ADDRCONFIG | AI_V4MAPPED);
        return real(ip, service, &h, res);
    }
    return real(node, service, hints, res);
}

static int pod_addr(struct in_addr *out) {
    const char *ip = getenv("KDT_RUN_POD_IP");
    return ip && inet_pton(AF_INET, ip, out) == 1;
}

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real = NULL;
    if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
    struct in_addr me;
    if (addr && pod_addr(&me)) {
        if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
            struct sockaddr_in s = *(const struct sockaddr_in *)addr;
            if (s.sin_addr.s_addr == htonl(INADDR_ANY)) { s.sin_addr = me; return real(fd, (struct sockaddr *)&s, sizeof s); }
        } else if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 s = *(const struct sockaddr_in6 *)addr;
            if (IN6_IS_ADDR_UNSPECIFIED(&s.sin6_addr)) {
                int v6only = 0; socklen_t ol = sizeof v6only;
                getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &ol);
                if (!v6only) {
                    memset(&s.sin6_addr, 0, sizeof s.sin6_addr);
                    s.sin6_addr.s6_addr[10] = 0xff; s.sin6_addr.s6_addr[11] = 0xff;
                    memcpy(&s.sin6_addr.s6_addr[12], &me, 4);
                    return real(fd, (struct sockaddr *)&s, sizeof s);
                }
            }
        }
    }
    return real(fd, addr, len);
}

int gethostname(char *name, size_t len) {
    const char *h = getenv("KDT_RUN_HOSTNAME");
    if (h) {
        size_t l = strlen(h);
        if (l + 1 > len) { errno = 36; return -1; }
        memcpy(name, h, l + 1); return 0;
    }
    int (*real)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
    return real(name, len);
}

int uname(struct utsname *buf) {
    int (*real)(struct utsname *) = (int (*)(struct utsname *))dlsym(RTLD_NEXT, "uname");
    int r = real(buf);
    const char *h = getenv("KDT_RUN_HOSTNAME");
    if (r == 0 && h) { strncpy(buf->nodename, h, sizeof buf->nodename - 1); buf->nodename[sizeof buf->nodename - 1] = 0; }
    return r;
}

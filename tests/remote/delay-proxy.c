/* tests/remote/delay-proxy.c: a TCP proxy that adds latency, and nothing else.
 *
 * usage: delay-proxy --listen [HOST:]PORT --target HOST:PORT [--delay MS]
 *                    [--up MS] [--down MS] [--max-queued BYTES]
 *
 * Accepts connections on --listen and forwards each one to --target.  Every
 * byte read from one side is written to the other side MS milliseconds after
 * it arrived: --up delays client -> target, --down target -> client,
 * --delay sets both (default 10: 20 ms added to a round trip).  Order is
 * kept and the delay does not throttle: each direction has a reader thread
 * that timestamps what recv() returns and queues it, and a writer thread
 * that sleeps until the oldest chunk is due and then writes every chunk due
 * by then in one writev(), so a stream keeps its rate and only arrives
 * later (a link with latency, not a slower one).  TCP_NODELAY on both
 * sockets.  Up to --max-queued bytes (default 64 MiB) wait per direction;
 * past that the reader stops reading (backpressure).  A half-close is
 * forwarded after the data before it; an error on either side resets both.
 *
 * Prints "delay-proxy: listening on HOST:PORT -> ..." on stdout when ready
 * (PORT 0 picks a free port and prints it).  The kernel here has no netem:
 * this is how the remote tests and benchmarks/remote.sh add latency.  Stop
 * it with SIGTERM or SIGINT.
 *
 * It replaces a Python asyncio proxy that spent 8 to 30 ms of CPU per
 * 7 MB frame pair (docs/remote.md): on a 2-core machine that is CPU the
 * stages it measures do not get.  Here the copies are the kernel's. */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define MAX_IOV 64

typedef struct Chunk Chunk;
struct Chunk {
  Chunk *next;
  int64_t due; /* CLOCK_MONOTONIC ns */
  ssize_t len; /* 0: end of stream (half-close), < 0: reset */
  size_t off;  /* bytes of it already written */
  char data[];
};

typedef struct Conn Conn;

/* one way of one connection */
typedef struct {
  Conn *conn;
  int from, to;
  int64_t delay; /* ns */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  Chunk *head, *tail;
  size_t queued;
  int dead; /* the writer stopped: the reader stops too */
} Dir;

struct Conn {
  int client, target;
  Dir up, down;
  int refs; /* threads still running */
  pthread_mutex_t lock;
};

static int64_t max_queued = 64 << 20;

static int64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
conn_unref (Conn *c)
{
  int last;

  pthread_mutex_lock (&c->lock);
  last = --c->refs == 0;
  pthread_mutex_unlock (&c->lock);
  if (!last)
    return;
  close (c->client);
  close (c->target);
  for (Dir *d = &c->up; d; d = d == &c->up ? &c->down : NULL) {
    while (d->head) {
      Chunk *n = d->head->next;
      free (d->head);
      d->head = n;
    }
    pthread_mutex_destroy (&d->lock);
    pthread_cond_destroy (&d->cond);
  }
  pthread_mutex_destroy (&c->lock);
  free (c);
}

/* an error on either side: both sockets shut, every thread wakes and ends */
static void
conn_abort (Conn *c)
{
  shutdown (c->client, SHUT_RDWR);
  shutdown (c->target, SHUT_RDWR);
}

static void
dir_push (Dir *d, Chunk *k)
{
  pthread_mutex_lock (&d->lock);
  k->next = NULL;
  if (d->tail)
    d->tail->next = k;
  else
    d->head = k;
  d->tail = k;
  d->queued += k->len > 0 ? (size_t) k->len : 0;
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
}

static void *
reader (void *data)
{
  Dir *d = data;

  for (;;) {
    Chunk *k = malloc (sizeof (Chunk) + CHUNK);
    ssize_t n;

    if (k == NULL) {
      conn_abort (d->conn);
      break;
    }
    pthread_mutex_lock (&d->lock);
    while (!d->dead && d->queued >= (size_t) max_queued)
      pthread_cond_wait (&d->cond, &d->lock);
    pthread_mutex_unlock (&d->lock);
    if (d->dead) {
      free (k);
      break;
    }
    do
      n = recv (d->from, k->data, CHUNK, 0);
    while (n < 0 && errno == EINTR);
    /* a small read keeps a small block (many small messages may wait) */
    if (n >= 0 && n < CHUNK / 4) {
      Chunk *small = realloc (k, sizeof (Chunk) + (size_t) n);
      if (small)
        k = small;
    }
    /* due from the moment it arrived */
    k->due = now_ns () + d->delay;
    k->len = n;
    k->off = 0;
    dir_push (d, k);
    if (n <= 0)
      break;
  }
  conn_unref (d->conn);
  return NULL;
}

static void *
writer (void *data)
{
  Dir *d = data;
  int done = 0;

  while (!done) {
    struct iovec iov[MAX_IOV];
    Chunk *batch[MAX_IOV];
    int n = 0;
    int64_t t;

    pthread_mutex_lock (&d->lock);
    while (d->head == NULL)
      pthread_cond_wait (&d->cond, &d->lock);
    /* sleep until the oldest is due (it cannot change: only the reader
     * appends, and later chunks are due later) */
    while ((t = d->head->due - now_ns ()) > 0) {
      struct timespec ts = { t / 1000000000, t % 1000000000 };

      pthread_mutex_unlock (&d->lock);
      nanosleep (&ts, NULL);
      pthread_mutex_lock (&d->lock);
    }
    /* everything due by now, in one write */
    t = now_ns ();
    for (Chunk *k = d->head; k && n < MAX_IOV && k->due <= t && k->len > 0; k = k->next) {
      batch[n] = k;
      iov[n].iov_base = k->data + k->off;
      iov[n].iov_len = (size_t) k->len - k->off;
      n++;
    }
    pthread_mutex_unlock (&d->lock);

    if (n == 0) {
      /* the head is an end: forward a half-close, or reset both sides */
      pthread_mutex_lock (&d->lock);
      done = d->head->len == 0 ? 1 : -1;
      pthread_mutex_unlock (&d->lock);
      if (done > 0)
        shutdown (d->to, SHUT_WR);
      else
        conn_abort (d->conn);
      break;
    }
    {
      struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t) n };
      ssize_t w;
      size_t freed = 0;

      do
        w = sendmsg (d->to, &m, MSG_NOSIGNAL);
      while (w < 0 && errno == EINTR);
      if (w < 0) {
        conn_abort (d->conn);
        break;
      }
      /* drop what went, keep the rest of a partly written chunk */
      pthread_mutex_lock (&d->lock);
      for (int i = 0; i < n && w > 0; i++) {
        Chunk *k = batch[i];
        size_t left = (size_t) k->len - k->off;

        if ((size_t) w >= left) {
          w -= (ssize_t) left;
          freed += (size_t) k->len;
          d->head = k->next;
          if (d->head == NULL)
            d->tail = NULL;
          free (k);
        } else {
          k->off += (size_t) w;
          w = 0;
        }
      }
      d->queued -= freed;
      pthread_cond_broadcast (&d->cond);
      pthread_mutex_unlock (&d->lock);
    }
  }
  pthread_mutex_lock (&d->lock);
  d->dead = 1;
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
  conn_unref (d->conn);
  return NULL;
}

static int
parse_addr (const char *text, const char *default_host, char *host, size_t size, char *port)
{
  const char *colon = strrchr (text, ':');
  const char *h = colon ? text : default_host;
  size_t hl = colon ? (size_t) (colon - text) : (h ? strlen (h) : 0);
  const char *p = colon ? colon + 1 : text;
  char *end;
  long v = strtol (p, &end, 10);

  if (h == NULL || hl == 0 || *p == '\0' || *end != '\0' || v < 0 || v > 65535)
    return -1;
  if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl + 1 > size)
    return -1;
  memcpy (host, h, hl);
  host[hl] = '\0';
  snprintf (port, 8, "%ld", v);
  return 0;
}

static double
parse_ms (const char *text, const char *what)
{
  char *end;
  double v = strtod (text, &end);

  if (*text == '\0' || *end != '\0' || !(v >= 0)) {
    fprintf (stderr, "delay-proxy: %s '%s' is not a delay in ms (a number >= 0)\n", what, text);
    exit (2);
  }
  return v;
}

static void
usage (FILE *f)
{
  fprintf (
      f,
      "usage: delay-proxy --listen [HOST:]PORT --target HOST:PORT [--delay MS] [--up MS] [--down MS] [--max-queued BYTES]\n"
      "A TCP proxy delaying every byte by MS each way (see tests/remote/delay-proxy.c).\n");
}

int
main (int argc, char **argv)
{
  const char *listen_arg = NULL, *target_arg = NULL;
  double delay = 10, up = -1, down = -1;
  char lhost[256], lport[8], thost[256], tport[8];
  struct addrinfo hints = { 0 }, *la = NULL, *ta = NULL;
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  char shown[INET6_ADDRSTRLEN];
  int ls, one = 1;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp (a, "-h") || !strcmp (a, "--help")) {
      usage (stdout);
      return 0;
    }
    if (v == NULL) {
      usage (stderr);
      return 2;
    }
    if (!strcmp (a, "--listen"))
      listen_arg = v;
    else if (!strcmp (a, "--target"))
      target_arg = v;
    else if (!strcmp (a, "--delay"))
      delay = parse_ms (v, a);
    else if (!strcmp (a, "--up"))
      up = parse_ms (v, a);
    else if (!strcmp (a, "--down"))
      down = parse_ms (v, a);
    else if (!strcmp (a, "--max-queued"))
      max_queued = strtoll (v, NULL, 10);
    else {
      usage (stderr);
      return 2;
    }
    i++;
  }
  if (up < 0)
    up = delay;
  if (down < 0)
    down = delay;
  if (listen_arg == NULL || target_arg == NULL
      || parse_addr (listen_arg, "127.0.0.1", lhost, sizeof lhost, lport) < 0
      || parse_addr (target_arg, NULL, thost, sizeof thost, tport) < 0) {
    fprintf (stderr, "delay-proxy: --listen [HOST:]PORT and --target HOST:PORT are needed\n");
    usage (stderr);
    return 2;
  }
  if (max_queued < CHUNK) {
    fprintf (stderr, "delay-proxy: --max-queued must be >= %d\n", CHUNK);
    return 2;
  }
  signal (SIGPIPE, SIG_IGN);
  /* chunks from the heap, reused, not mmap()ed and faulted in each time */
  mallopt (M_MMAP_THRESHOLD, 4 * CHUNK);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  if (getaddrinfo (lhost, lport, &hints, &la) != 0
      || getaddrinfo (thost, tport, &hints, &ta) != 0) {
    fprintf (stderr, "delay-proxy: cannot resolve %s or %s\n", listen_arg, target_arg);
    return 1;
  }
  ls = socket (la->ai_family, SOCK_STREAM, 0);
  setsockopt (ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ls < 0 || bind (ls, la->ai_addr, la->ai_addrlen) < 0 || listen (ls, 64) < 0
      || getsockname (ls, (struct sockaddr *) &bound, &blen) < 0) {
    fprintf (stderr, "delay-proxy: cannot listen on %s: %s\n", listen_arg, strerror (errno));
    return 1;
  }
  if (bound.ss_family == AF_INET6)
    inet_ntop (AF_INET6, &((struct sockaddr_in6 *) &bound)->sin6_addr, shown, sizeof shown);
  else
    inet_ntop (AF_INET, &((struct sockaddr_in *) &bound)->sin_addr, shown, sizeof shown);
  printf ("delay-proxy: listening on %s:%u -> %s:%s, +%g ms up, +%g ms down\n", shown,
          ntohs (((struct sockaddr_in *) &bound)->sin_port), thost, tport, up, down);
  fflush (stdout);

  for (;;) {
    int cl = accept (ls, NULL, NULL), tg;
    pthread_t th;
    Conn *c;

    if (cl < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      fprintf (stderr, "delay-proxy: accept: %s\n", strerror (errno));
      return 1;
    }
    tg = socket (ta->ai_family, SOCK_STREAM, 0);
    if (tg < 0 || connect (tg, ta->ai_addr, ta->ai_addrlen) < 0) {
      fprintf (stderr, "delay-proxy: cannot connect to %s:%s: %s\n", thost, tport,
               strerror (errno));
      fflush (stderr);
      if (tg >= 0)
        close (tg);
      close (cl);
      continue;
    }
    setsockopt (cl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt (tg, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c = calloc (1, sizeof *c);
    c->client = cl;
    c->target = tg;
    c->refs = 4;
    pthread_mutex_init (&c->lock, NULL);
    c->up = (Dir){ .conn = c, .from = cl, .to = tg, .delay = (int64_t) (up * 1e6) };
    c->down = (Dir){ .conn = c, .from = tg, .to = cl, .delay = (int64_t) (down * 1e6) };
    for (Dir *d = &c->up; d; d = d == &c->up ? &c->down : NULL) {
      pthread_mutex_init (&d->lock, NULL);
      pthread_cond_init (&d->cond, NULL);
      pthread_create (&th, NULL, reader, d);
      pthread_detach (th);
      pthread_create (&th, NULL, writer, d);
      pthread_detach (th);
    }
  }
}

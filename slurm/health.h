/*
 * stageload-slurm-health's logic, apart from its calls to the daemon and to
 * scontrol so that tests/test_slurm_health.c can drive it: the config file,
 * reading `scontrol show node -o`, and the decision to drain, resume or
 * leave a node (docs/slurm.md, "Node health").
 */
#ifndef SL_SLURM_HEALTH_H
#define SL_SLURM_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#define HEALTH_CONF_DEFAULT "/etc/stageload/slurm-health.conf"
/* Every reason this program writes starts so; only such drains are its own
 * to resume. */
#define HEALTH_REASON_PREFIX "stageload:"

struct health_conf {
	char socket[1024];     /* the daemon's socket; %n: the node's name */
	double free_floor_pct; /* drain when free % stays under it ... */
	int64_t free_hold_ms;  /* ... for this long; 0: no floor */
	uint64_t swap_budget;  /* drain when swap in use is above it; 0: none */
	char scontrol[1024];
	char
	    slurm_conf[1024]; /* SLURM_CONF for scontrol; "": Slurm's default */
	int64_t timeout_ms;   /* for the daemon's answers and each scontrol */
};

void health_conf_defaults(struct health_conf *c);
/* Reads "key = value" lines ('#' starts a comment) over the defaults.
 * Returns 0, or -errno / -EINVAL with a readable cause in err. */
int health_conf_parse(struct health_conf *c, const char *text, char *err,
                      size_t errlen);
int health_conf_load(struct health_conf *c, const char *path, char *err,
                     size_t errlen);
/* The socket path with every %n replaced by node and %% by %. -ENAMETOOLONG
 * when it does not fit, -EINVAL for another % sequence. */
int health_expand(const char *tmpl, const char *node, char *out, size_t len);

struct health_node {
	int drained;      /* State= has DRAIN (DRAINED, DRAINING, IDLE+DRAIN) */
	char reason[512]; /* Reason=, without Slurm's " [user@time]" */
};
/* One line of `scontrol show node NAME -o`. -EINVAL when it has no State=. */
int health_node_parse(const char *line, struct health_node *n);

/* What the daemon says about the node. */
struct health_memory {
	int answered;       /* 0: the daemon did not answer */
	double free_pct;    /* now */
	uint64_t swap_used; /* now */
	int window_covered; /* the daemon sampled all of the last hold */
	double window_max_free_pct; /* the highest free % in that window */
};

enum health_action { HEALTH_NONE, HEALTH_DRAIN, HEALTH_RESUME };

/* The decision, with why in `why` (for the log, and the drain's reason). */
enum health_action health_decide(const struct health_conf *c,
                                 const struct health_node *n,
                                 const struct health_memory *m, char *why,
                                 size_t whylen);

#endif

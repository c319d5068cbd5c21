/* libnnpipe: nnp_plan_make(), the one planning call of `nnpipe split` and
 * nnpipeline (include/nnpipe/plan.h).
 *
 * The partitioner's policies (plan files, default devices, fallback, cuts,
 * the planner, pinning) are nnp_partition_make()'s (lib/partition/make.c);
 * what this layer adds, because it sits above both the partitioner and the
 * remote client, is the remote devices of a split: each server is asked
 * for its node costs at the split's shapes and the link to it is measured
 * (nnp_remote_prepare_cost_model()), with one policy (NnpPlanRemote.strict)
 * for a server that refuses and one for a server that cannot be reached. */
#include <nnpipe/log.h>
#include <nnpipe/plan.h>
#include <nnpipe/remote.h>

#include "partition/partition.h"
#include "remote/remote-private.h"
#include <nnpipe/device.h>
#include <nnpipe/plan-make.h>
#include <nnpipe/specialize.h>

#define CAT "nnp-partition"
#define DEFAULT_WINDOW 4

typedef struct {
  const NnpPlanRequest *req;
  NnpModel *model;
  const NnpInputShape *shapes;
  int n_shapes;
  const NnpLink *link; /* NnpPlanRemote.link parsed, or NULL */
} RemoteAsk;

static void
notify (NnpPlanNoticeFunc func, gpointer data, const char *message)
{
  NNP_INFO (CAT, "%s", message);
  if (func)
    func (-1, message, data);
}

/* An NnpPlanPrepareFunc: the remote devices of a split, asked of their
 * servers. */
static gboolean
ask_servers (NnpCostModel *cm, NnpGraph *graph, const NnpDeviceSpec *devs, int n_devs,
             gpointer user_data, GError **error)
{
  const RemoteAsk *ra = user_data;
  const NnpPlanRemote *rem = &ra->req->remote;
  g_autofree char *key = NULL;

  for (int i = 0; i < n_devs; i++) {
    g_autoptr (GError) err = NULL;
    g_autofree char *msg = NULL;

    if (!nnp_device_spec_remote_address (devs[i].device))
      continue;
    if (key == NULL)
      key = nnp_remote_shapes_text (ra->shapes, ra->n_shapes);
    if (nnp_remote_prepare_cost_model (
            cm, graph, &devs[i], nnp_model_get_digest (ra->model), rem->token, key,
            rem->window > 0 ? rem->window : DEFAULT_WINDOW, ra->link, &err)) {
      g_autofree char *text = nnp_link_to_string (nnp_cost_model_get_link (cm, devs[i].device));
      msg = g_strdup_printf ("%s: link %s (%s), node costs from the server", devs[i].device, text,
                             ra->link ? "given" : "measured");
      notify (rem->answered, rem->answered_data, msg);
      continue;
    }
    /* the server answered with a refusal (the socket's own errors are
     * G_IO_ERROR: nobody to ask) */
    if (rem->strict && err->domain != G_IO_ERROR) {
      g_propagate_error (error, g_steal_pointer (&err));
      return FALSE;
    }
    if (ra->link)
      nnp_cost_model_set_link (cm, devs[i].device, ra->link);
    msg = g_strdup_printf (
        "%s: no costs from its server (%s): planned with this host's CPU costs, %s", devs[i].device,
        err->message, ra->link ? "over the given link" : "and no link");
    notify (ra->req->notice, ra->req->notice_data, msg);
  }
  return TRUE;
}

NnpPlan *
nnp_plan_make (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
               const NnpPlanRequest *req, NnpGraph **graph_out, GError **error)
{
  RemoteAsk ra = { req, model, shapes, n_shapes, NULL };
  NnpLink link;

  g_return_val_if_fail (model != NULL && req != NULL, NULL);
  if (req->remote.link && *req->remote.link) {
    if (!nnp_link_parse (req->remote.link, &link, error))
      return NULL;
    ra.link = &link;
  }
  return nnp_partition_make (model, shapes, n_shapes, req, ask_servers, &ra, graph_out, error);
}

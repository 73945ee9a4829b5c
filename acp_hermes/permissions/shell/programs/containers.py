"""Containers, clusters and infrastructure: what removes volumes, publishes images or destroys resources.

``docker``/``podman`` (``system prune``, ``volume rm``, ``rm -f``, ``compose down -v``, ``push``),
``kubectl delete``, ``helm uninstall``, ``terraform``/``tofu``/``pulumi``/``cdk destroy``; and the grant
keys of their nested subcommands (``docker compose up``, ``kubectl rollout status``).
"""

from __future__ import annotations

from acp_hermes.permissions.shell.arguments import has_flag, names, subcommand
from acp_hermes.permissions.shell.programs.base import SIMPLE, Family, key_shape, network_subcommands
from acp_hermes.permissions.shell.rating import Call

_DOCKER_OPTIONS = frozenset({"-H", "--host", "-c", "--context", "--config", "-l", "--log-level"})


def _check_docker(call: Call) -> None:
    sub, rest = subcommand(call.args, _DOCKER_OPTIONS)
    second, _ = subcommand(rest, frozenset({"-f", "--file", "-p", "--project-name", "--env-file", "--profile"}))
    name, found = call.name, call.findings
    if (sub, second) == ("system", "prune"):
        found.dangerous(f"{name} system prune")
    elif sub == "volume" and second in ("prune", "rm"):
        found.dangerous(f"deletes {name} volumes")
    elif (sub == "rm" or (sub, second) == ("container", "rm")) and has_flag(rest, "f", "--force"):
        found.dangerous(f"force-removes {name} containers")
    elif (sub, second) == ("compose", "down") and has_flag(rest, "v", "--volumes"):
        found.dangerous(f"deletes {name} compose volumes")
    elif sub == "push" or (sub, second) == ("image", "push"):
        found.dangerous(f"publishes an image ({name} push)")


def _check_destroy(call: Call) -> None:
    """Infrastructure tools: kubectl delete, helm uninstall, terraform/pulumi/cdk destroy."""
    sub, rest = subcommand(call.args, frozenset({"-n", "--namespace", "--context", "--kubeconfig"}))
    destroys = {
        "kubectl": sub == "delete",
        "helm": sub in ("uninstall", "delete", "del", "un"),
    }.get(call.name, sub == "destroy" or (sub == "apply" and has_flag(rest, "", "-destroy", "--destroy")))
    if destroys:
        call.findings.dangerous(f"destroys infrastructure ({call.name} {sub})")


_DOCKER_GROUPS = "compose container image network volume system builder buildx context plugin swarm node service stack"
_DOCKER_KEY_OPTIONS = " ".join(_DOCKER_OPTIONS) + " -f --file -p --project-name --env-file --project-directory"
FAMILY = Family(
    checks={
        **dict.fromkeys(("docker", "podman"), _check_docker),
        **dict.fromkeys(("kubectl", "helm", "terraform", "tofu", "terragrunt", "pulumi", "cdk"), _check_destroy),
    },
    shapes={
        **dict.fromkeys(("docker", "podman"), key_shape(nested=_DOCKER_GROUPS, options=_DOCKER_KEY_OPTIONS)),
        "docker-compose": key_shape(options="-f --file -p --project-name --env-file --profile"),
        "kubectl": key_shape(nested="config rollout auth certificate",
                             options="-n --namespace --context --kubeconfig"),
        "helm": key_shape(nested="repo plugin dependency registry",
                          options="-n --namespace --kube-context --kubeconfig"),
        "terraform": key_shape(nested="state workspace", options=""),
        "tofu": key_shape(nested="state workspace"),
        "pulumi": key_shape(nested="stack config"),
        "supabase": key_shape(nested="db functions"),
        "kind": key_shape(nested="create delete get load export"),
        "ansible-galaxy": key_shape(nested="collection role"),
        **dict.fromkeys(names("heroku fly flyctl vercel netlify firebase wrangler cdk vagrant minikube ollama"),
                        SIMPLE),
    },
    network=dict.fromkeys(("docker", "podman"), network_subcommands("pull push login build run")),
    network_programs=names("kubectl helm"),
)

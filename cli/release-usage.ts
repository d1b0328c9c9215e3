/** The usage texts of `tao manifest` and `tao rollout` (cli/release-command.ts), apart so `tao --help` loads no Kafka client. */
export const MANIFEST_USAGE = `usage: tao manifest publish [--folder F] [--activate] [--note TEXT] | list | show <digest>
  publish   records the release as a manifest in tao.manifests and prints its digest (the release id):
            the release folder F laid over this deployment's settings (runtime/release/folder.ts), or
            without --folder the deployment's own (its TAO_SKILLS_DIR, TAO_TOOL_CATALOG_DIR, flows,
            routes, observation rules and run settings). Publishing a release already published
            writes nothing; one the stages could not load is refused. --activate: make it the active manifest when none is
  list      every published manifest: digest, when, its role (active, candidate, previous), skills
  show      one manifest (a digest, or 8+ of its first hex digits) as JSON: parts and their files'
            sha256, skills with their digests, run settings`;

export const ROLLOUT_USAGE = `usage: tao rollout start <digest> --percent N [--reason TEXT] | status [--json] | promote | rollback [--reason TEXT]
  start     send N% of new runs (by a stable hash of the run id) to a published manifest; the
            active manifest takes the others; runs already started keep their manifest
  status    the release pointer, and per manifest from tao.outcomes: runs, task completion rate,
            self-recovered, escalations, cost per run
  promote   the candidate becomes the active manifest for every new run
  rollback  one step back: ends a rollout in progress, or makes the previous manifest active again
  Each is one record of tao.manifests (audited, replayed); every stage instance applies it to new
  runs within seconds.`;

//! The text: a small deterministic generator (splitmix64) over word lists of tools, hosts,
//! people, operations and everyday English.

use std::fmt::Write as _;

use super::dates::timestamp;

/// splitmix64: small, deterministic, good enough for test data.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An index below `n`, the first ones more likely (word use is skewed).
    fn skewed(&mut self, n: usize) -> usize {
        let u = self.unit();
        ((u * u * n as f64) as usize).min(n - 1)
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        // Two thirds skewed, a third uniform: common words and a long tail.
        if self.below(3) < 2 {
            list[self.skewed(list.len())]
        } else {
            list[self.below(list.len() as u64) as usize]
        }
    }
}

/// splitmix64's finalizer: a bijection on u64, so distinct inputs give distinct ids.
pub(super) fn mix(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A bijection on 48 bits, for slog ids (`sl-` and 12 hex).
fn mix48(x: u64) -> u64 {
    pub(super) const M: u64 = (1 << 48) - 1;
    let mut z = x & M;
    z = z.wrapping_mul(0x5851_f42d_4c95_7f2d | 1) & M;
    z ^= z >> 24;
    z = z.wrapping_mul(0x1405_7b7e_f767_814f | 1) & M;
    z ^ (z >> 17)
}

const CATEGORIES: [(&str, u64); 7] = [
    ("operations", 30),
    ("system-architecture", 18),
    ("projects", 14),
    ("rules-conventions", 12),
    ("preferences", 10),
    ("people-relationships", 10),
    ("memory-system", 6),
];

/// Per category (in [`CATEGORIES`] order), the first sentence of an observation. Keys: N
/// person, T tool or technology, O operations noun, D engineering noun, L everyday noun, V
/// verb in the past, B verb, S verb with -s, G verb with -ing, A adjective, W adverb, X
/// project, H host, R version, K number, P ticket, Y role, Z when, M month, J weekday.
const TEMPLATES: [&[&str]; 7] = [
    &[
        "{V} {T} on {H} after the {O}; the {A} {D} was the cause.",
        "The {T} {O} on {H} {Z} was a {A} {D}, fixed by {N}.",
        "Disk full on {H} again: the {T} logs grew past {K} GB because retention was off.",
        "The nfs mount on {H} needs root to unmount, and {T} hangs until it is gone.",
        "Redis timeout errors on {H} went away after {N} raised the pool limit to {K}.",
        "Caddy certificate renewal failed on {H} because port 80 was blocked by {T}.",
        "Postgres migration {R} took {K} minutes on {H} and locked the {D} table.",
        "Deploy of {X} {R} was rolled back after the {A} health check failed on {H}.",
        "Backup retention for {X} is {K} days on {T}; restores were tested {Z}.",
        "Grafana alert for the {T} {O} fired {K} times {Z}, mostly {A} noise.",
        "{T} on {H} restarted itself {K} times {Z} after the {A} {O}.",
        "SSH key rotation for {H} is done by {N} every quarter through {T}.",
        "The {O} runbook for {T} says to {B} the {D} on {H} before anything else.",
        "{N} {V} the {T} {D} on {H} and the {O} stopped.",
    ],
    &[
        "The {D} in {X} is built on {T} and talks to {T} through a {A} {D}.",
        "{X} keeps its {D} in {T}, with a {A} cache in {T} in front of it.",
        "The {D} layer of {X} is {A}: every {D} goes through one {D}.",
        "{T} handles the {D} for {X}; {T} only stores the {A} {D}.",
        "The {D} schema for {X} has a {A} index on the {D} column since {R}.",
        "We split the {X} {D} into a {A} {D} and a {A} {D} to keep the API stable.",
        "The {X} {D} reads from {T} and writes through a {A} queue in {T}.",
    ],
    &[
        "{X} release {R} is planned for {M} with the {A} {D} feature.",
        "The {X} roadmap moves the {D} work to the next sprint because of {P}.",
        "Milestone {R} of {X} needs the {T} migration and a {A} {D} before {M}.",
        "{N} owns the {X} {D} project and reports on it every {J}.",
        "The issue {P} in {X} blocks the {A} release until {N} {V} the {D}.",
        "{X} version {R} shipped the {A} {D} and dropped support for {T}.",
        "The release plan for {X} puts the {A} {D} behind a flag until {M}.",
    ],
    &[
        "Never {B} the {D} on {H} without a {A} backup first.",
        "Always {B} the {D} before you {B} {T} in production.",
        "The team rule is that every {D} change needs a review from {N}.",
        "Do not force-push to main; {B} the branch and open a pull request instead.",
        "Commit messages start with the area, like {T}: {V} the {D}.",
        "Every {O} gets a ticket like {P} and a short note in the slog.",
        "Run the {A} test suite and the {T} lint before tagging release {R}.",
        "Secrets must never go into {T} config; use the {T} store on {H}.",
    ],
    &[
        "{N} prefers {A} {D} over {A} {D} when working on {X}.",
        "The user likes {T} for {D} work and finds {T} too {A}.",
        "{N} wants {A} commit messages and short {D} descriptions.",
        "The user prefers tabs over spaces in {T} files and {A} names for every {D}.",
        "{N} dislikes {A} {L} and would rather {B} the {D} {W}.",
        "For {X} the user prefers {T} with {A} defaults instead of {T}.",
        "The user likes to {B} the {D} first thing in the {L}, before coffee.",
        "{N} prefers {A} answers with a short summary and the exact {T} commands.",
    ],
    &[
        "{N} went camping with her kids and her husband {Z}.",
        "{N} is the {Y} on {X} and prefers {A} meetings in the {L}.",
        "{N} and {N} pair on the {X} {D} every {J}.",
        "The client {N} wants weekly updates on {X} by email.",
        "{N} is back from {L} leave {Z} and takes over the {T} work.",
        "{N}'s daughter started school, so {N} leaves early on {J}.",
        "{N} reports to {N}, who manages the {X} team.",
        "{N} {V} the {L} with the family {Z} and was {A} about it.",
    ],
    &[
        "cairn should recall {A} observations about {X} at session start.",
        "The memory for {X} was {A} until {N} {V} the stale observations.",
        "Recall misses {A} {D} notes when the query says {T} instead of {D}.",
        "Observations about {T} belong in the operations section of MEMORY.md.",
        "{N} asked cairn to remember that {T} {S} the {A} {D} on {H}.",
    ],
];

/// Second and third sentences.
const MORE: &[&str] = &[
    "{N} {V} the {A} {D} on {H} {Z}.",
    "It {V} again {Z} after the {O}.",
    "The {L} was {A} and the {D} stayed {A}.",
    "{N} {V} that the {T} {D} is {A}.",
    "This matters for {X} because the {D} is {A}.",
    "We {V} the {D} and {V} the {T} {O} {W}.",
    "Next time {B} the {T} {D} before the {O}.",
    "{N} thinks the {A} {D} should {B} {W}.",
    "The {T} docs say the {D} is {A} by default.",
    "See {P} for the {A} details.",
    "{N} {S} the {T} {D} {W} now.",
    "The {O} cost us {K} minutes of {L}.",
];

/// Clauses that lengthen a sentence.
const FILLERS: &[&str] = &[
    "because {N} {V} the {A} {O}",
    "on {H} during the {L}",
    "after {N} {V} the {D}",
    "which made the {O} {A}",
    "and {N} {V} it {Z}",
    "while the {T} {D} was {A}",
    "for the {X} {D}",
    "with the {A} {T} config",
    "before {G} the {D} on {H}",
    "so the {L} stayed {A}",
];

const SLOG_DETAILS: &[&str] = &[
    "{V} {U} on {H} with the {A} {D} config",
    "rolled out {X} {R} to {H} and {H}",
    "{V} the {U} {O} on {H}; {N} confirmed the {D} is {A}",
    "{V} {K} {D} entries from {U} on {H}",
    "{U} {D} on {H} {V} after the {A} {O}",
    "{V} {U} to {R} on {H}",
    "moved the {X} {D} from {H} to {H}",
    "{V} the {A} {D} in {U} for {X}",
];

const SLOG_REASONS: &[&str] = &[
    "the {O} on {H} was {A}",
    "{N} asked for it",
    "{P}",
    "{A} {D} after the {O}",
    "the {T} {D} was {A}",
    "planned {L} maintenance",
];

const SLOG_ACTIONS: &[&str] = &[
    "deploy",
    "deploy",
    "deploy",
    "fix",
    "fix",
    "configure",
    "configure",
    "restart",
    "upgrade",
    "rollback",
    "investigate",
    "migrate",
    "rotate",
    "scale",
    "backup",
    "restore",
    "install",
    "remove",
    "tune",
    "test",
];

const SLOG_TOOLS: &[&str] = &[
    "caddy",
    "redis",
    "postgres",
    "nginx",
    "docker",
    "systemd",
    "grafana",
    "prometheus",
    "loki",
    "k3s",
    "terraform",
    "ansible",
    "github-actions",
    "cloudflare",
    "minio",
    "rabbitmq",
    "vault",
    "cron",
    "letsencrypt",
    "node-exporter",
    "pgbouncer",
    "sentry",
    "tailscale",
    "wireguard",
    "backup-script",
];

const ADR_TITLES: &[&str] = &[
    "Use {T} for the {X} {D}",
    "Move the {D} from {T} to {T}",
    "Adopt {A} {D} in {X}",
    "Keep the {D} in {T}",
    "Drop {T} from the {X} stack",
    "Run {T} on {H}",
    "Store {X} {D} in {T}",
    "Replace {T} with {T} for {D}",
];

const PERSON_NAMES: &str = "Ana Ben Chen Dara Eli Melanie Caroline Jon Priya Omar Lena Tomas Yuki Sam Alex Maria \
    Jose Fatima Noah Emma Liam Olivia Lucas Mia Ethan Sofia Mateo Isabella Leo Amelia Hugo Chloe Arjun Ananya Wei \
    Mei Hiroshi Aiko Kofi Amara Diego Lucia Pavel Olga Sven Ingrid Pierre Camille Marco Giulia Hans Greta Ravi \
    Deepa Kwame Zara Ibrahim Layla Rafael Beatriz Nikos Eleni Jakub Zofia Mateus Ines Tariq Noor Felix Clara \
    Oskar Maja Emil Astrid Rosa Pablo Ada Grace Alan Linus Ken Dennis Barbara Margaret Edsger Donald Leslie \
    Frances Radia Tim Vint Bjarne Guido Rob Russ Brian Kim Taylor Jordan Casey Riley Morgan Jamie Avery Quinn \
    Harper Rowan Sage Robin Charlie Frankie Georgia Henry Iris Jack Kate Laura Mark Nina Owen Paula Rachel Steve \
    Tina Victor Wendy Xavier Yara Zoe Abel Bruno Celia Dmitri Esther Farid Gabriel Hana Ivan Julia Karim Lars \
    Marta Nils Otto Petra Rania Simon Tess Ulla Vera \
    Aaron Abigail Adrian Agnes Aidan Alice Amir Andrea Angela Anton Ariel Arthur Aurora Beatrix \
    Benedict Bianca Boris Caleb Carla Carmen Cecilia Cedric Cyrus Daisy Damian Daniel Daphne Darius \
    Delia Dominic Dora Edgar Edith Elena Elias Eliza Elliot Elsa Enzo Erik Erin Eva Ezra Fabian Fiona \
    Florian Freya Gideon Gloria Gustav Hannah Harvey Hazel Helena Hector Ida Ilse Isaac Ivy Jasper \
    Jenna Joel Jonas Josephine Jude Juliet Kai Karen Kenji Kira Klaus Lara Leon Lily Lorenzo Lotte Luca \
    Luna Magnus Malik Matilda Maxim Milo Mira Nadia Naomi Nathan Nora Olive Oscar Paolo Penelope \
    Quentin Rebecca Remy Rhea Ruben Ruth Selma Silas Stella Theo Thea Ursula Valentin Viola Walter \
    Willa Yusuf";

const TECH: &str = "redis postgres caddy nginx docker kubernetes systemd grafana prometheus loki terraform ansible git \
    github gitlab rust cargo tokio serde clap tantivy python django flask fastapi celery react typescript node npm \
    pnpm yarn webpack vite eslint prettier rustfmt clippy go java kotlin gradle maven spring postgresql mysql \
    sqlite mongodb elasticsearch opensearch kafka rabbitmq nats minio s3 cloudflare aws gcp azure ec2 lambda \
    fargate ecs eks k3s helm argocd fluxcd traefik haproxy envoy istio linkerd consul vault nomad packer vagrant \
    qemu kvm proxmox zfs btrfs ext4 lvm nfs samba rsync restic borg cron systemctl journald rsyslog fluentd \
    vector jaeger tempo opentelemetry sentry pagerduty opsgenie slack matrix zulip jira linear confluence notion \
    obsidian vim neovim emacs vscode zed tmux zsh bash fish ssh wireguard tailscale openvpn iptables nftables \
    ufw fail2ban letsencrypt certbot openssl gpg age sops pgbouncer patroni timescaledb clickhouse duckdb \
    parquet arrow pandas polars numpy jupyter pytorch onnx llama ollama openai anthropic claude codex copilot \
    cursor aider mcp json yaml toml markdown protobuf grpc graphql rest websocket http2 http3 quic dns dhcp \
    bgp ipv6 tls mtls oauth oidc saml ldap keycloak authelia bitwarden 1password memcached varnish cdn webhook \
    cloudinit ubuntu debian alpine fedora arch nixos macos windows wsl homebrew apt dnf nix flatpak snap \
    podman buildah skopeo containerd runc cgroups selinux apparmor ebpf bpftrace strace perf valgrind gdb lldb \
    pprof flamegraph criterion hyperfine ripgrep fd jq yq sed awk make cmake bazel ninja llvm clang gcc musl \
    glibc wasm wasmtime deno bun svelte vue angular nextjs remix astro hugo jekyll tailwind bootstrap sass \
    storybook playwright cypress selenium jest vitest pytest mypy ruff black poetry uv pip conda mkdocs sphinx \
    rabbit-queue node-exporter github-actions gitea forgejo drone woodpecker jenkins buildkite circleci \
    rocksdb leveldb lmdb sled foundationdb cockroachdb yugabyte cassandra scylla dynamodb bigquery \
    snowflake redshift airflow dagster prefect dbt spark flink beam hadoop hive presto trino superset \
    metabase tableau looker kibana graylog splunk datadog newrelic honeycomb lightstep zipkin statsd \
    telegraf influxdb victoriametrics thanos cortex mimir alertmanager blackbox-exporter uptime-kuma \
    healthchecks netdata glances htop btop iotop nmon sar vmstat iostat netstat ss tcpdump wireshark \
    mtr traceroute dig nslookup curl wget httpie postman insomnia ngrok frp cloudflared coredns unbound \
    bind pihole adguard dnsmasq kea radvd keepalived pacemaker corosync drbd ceph glusterfs longhorn \
    rook openebs velero stash kopia duplicati rclone syncthing nextcloud seafile gitea-runner renovate \
    dependabot semgrep trivy grype syft cosign sigstore notary harbor quay artifactory nexus verdaccio \
    devpi pypi crates-io npmjs rubygems bundler rails sinatra laravel symfony phoenix elixir erlang \
    haskell ocaml scala clojure zig nim crystal lua luajit perl php ruby swift objective-c dart flutter \
    electron tauri gtk qt wxwidgets sdl opengl vulkan metal webgpu cuda rocm tensorrt triton-server \
    vllm llamacpp gguf safetensors huggingface transformers tokenizers sentence-transformers faiss \
    qdrant weaviate milvus chroma pgvector lancedb tantivy-py meilisearch typesense solr lucene bleve";

const OPS_NOUNS: &str = "deploy deployment rollout rollback incident outage alert alerts pager dashboard \
    certificate renewal backup backups restore snapshot retention migration upgrade downgrade restart reboot \
    failover replica replication primary cluster node nodes pod pods container containers volume volumes disk \
    disks partition mount quota inode memory swap cpu load latency throughput timeout timeouts retry retries \
    queue queues worker workers job jobs cron schedule window maintenance runbook postmortem oncall rotation \
    key keys secret secrets token tokens password credentials firewall port ports proxy gateway ingress \
    egress route routes dns record zone subnet vlan bridge interface link bandwidth packet loss jitter healthcheck \
    probe liveness readiness metric metrics log logs trace traces span sampling scrape target exporter \
    threshold budget slo sla error errors crash crashloop oom panic leak deadlock lock locks contention spike \
    regression capacity scaling autoscaler limit limits request requests pool connections handshake \
    cert expiry rotation ticket page escalation freeze release hotfix patch image registry tag digest mirror \
    cache purge invalidation warmup traffic canary bluegreen drain cordon taint upgrade-window";

const DEV_NOUNS: &str = "function module crate package library binary test tests benchmark index schema query \
    queries migration API endpoint handler middleware router controller model view template component hook \
    state store reducer context type trait struct enum interface class method field column table row key \
    value map list vector array buffer stream iterator parser lexer tokenizer serializer format encoding \
    config setting option flag feature branch commit merge rebase diff patch review pull-request release \
    version tag changelog lint warning error panic exception stack trace log message output input argument \
    parameter return result callback future promise task thread process lock mutex channel signal event \
    queue scheduler worker pool connection session cookie header body payload response request client server \
    service daemon agent plugin extension script pipeline workflow build artifact cache layer image manifest \
    dependency lockfile toolchain compiler linter formatter debugger profiler allocator heap stack pointer \
    reference lifetime borrow macro generic closure snapshot fixture mock stub assertion coverage docs readme \
    comment naming convention style guide spec design architecture boundary abstraction refactor cleanup \
    rewrite prototype spike experiment benchmark-suite dataset embedding vector-store prompt context-window \
    token-budget memory-file observation decision record note summary briefing ranking score decay \
    checkpoint offset payload segment merge-policy writer reader searcher collector \
    invariant precondition postcondition contract protocol handshake-code state-machine transition \
    backoff jitter-code ratelimiter circuit-breaker bulkhead idempotency-key nonce checksum hash digest \
    signature certificate-chain keystore truststore keyring secret-file env-file dotfile makefile \
    dockerfile compose-file helm-chart values-file manifest-file crd operator controller-loop \
    reconciler webhook-handler admission-hook sidecar init-container cronjob daemonset statefulset \
    deployment-spec replicaset namespace label selector annotation finalizer owner-reference \
    migration-script seed-data fixture-file golden-file snapshot-test property-test fuzz-target \
    regression-test smoke-test load-test soak-test chaos-test canary-check feature-flag kill-switch";

const LIFE_NOUNS: &str = "morning afternoon evening night weekend holiday vacation trip flight train bus car \
    bike walk run hike camping beach mountain lake river park garden kitchen coffee tea breakfast lunch dinner \
    meal pizza pasta soup salad bread cake birthday party wedding concert movie book podcast music song guitar \
    piano game football soccer tennis basketball swim gym yoga doctor dentist school class teacher homework \
    exam kids family parents mother father sister brother daughter son baby grandmother grandfather cousin \
    friend neighbour dog cat puppy kitten house flat apartment office desk chair laptop phone monitor keyboard \
    headphones rain snow sun weather winter spring summer autumn storm heat cold flu cough sleep nap dream \
    news email calendar meeting call standup retro demo lunch-break coffee-break commute traffic city village \
    market shop grocery bakery library museum theatre restaurant cafe hotel airport station bridge street road \
    hill forest field farm island harbour boat ship sea ocean sky star moon sunrise sunset picnic barbecue \
    festival holiday-season new-year christmas easter move renovation furniture paint plant flower tree \
    moving-day anniversary graduation promotion interview offer contract salary budget taxes bank rent \
    insurance appointment errand chores laundry dishes cleaning shopping cooking baking reading writing \
    drawing painting photography running cycling climbing skiing sailing fishing knitting gardening chess \
    puzzle crossword sudoku volunteering choir band team-dinner offsite conference talk workshop meetup \
    hackathon course lesson language spanish french german japanese mandarin \
    apple orange banana lemon strawberry grape cherry peach pear plum melon tomato potato carrot onion \
    garlic pepper rice beans cheese butter milk sandwich burger noodles curry sushi tacos pancakes \
    waffles cereal yogurt juice wine beer water bottle cup mug plate bowl spoon fork knife table sofa \
    bed pillow blanket lamp window door roof wall floor stairs garage basement attic balcony yard fence \
    gate mailbox letter parcel delivery courier postcard ticket passport visa luggage suitcase backpack \
    map compass tent sleeping-bag campfire lantern torch battery charger adapter plug socket fridge \
    oven stove microwave kettle toaster dishwasher washing-machine dryer vacuum broom mop bucket sponge \
    soap shampoo towel toothbrush mirror shower bath sink umbrella raincoat jacket coat sweater scarf \
    gloves hat boots shoes sneakers socks shirt trousers jeans dress skirt suit tie belt wallet keys \
    watch glasses ring necklace bracelet earrings notebook pen pencil marker sticky-note whiteboard \
    printer paper envelope stamp diary journal magazine newspaper novel comic poem story essay article \
    blog newsletter recipe cookbook grocery-list receipt invoice bill refund discount coupon gift \
    present surprise card balloon candle cake-slice dessert ice-cream chocolate cookie biscuit muffin \
    croissant bagel toast jam honey cereal-bar snack popcorn chips nuts almonds olives hummus salsa \
    guacamole pizza-night takeaway leftovers brunch supper feast neighbourhood playground school-run \
    nursery kindergarten university campus dorm lecture seminar thesis deadline-week exam-season \
    report-card parent-evening sports-day swimming-lesson piano-lesson football-match tennis-club \
    chess-club book-club choir-practice rehearsal audition recital gallery exhibition zoo aquarium \
    circus fair carnival parade fireworks bonfire camp cabin cottage lodge hostel campsite trail summit \
    valley canyon cliff cave waterfall glacier desert meadow orchard vineyard";

const VERBS_PAST: &str = "restarted migrated upgraded fixed broke noticed found reported deployed reverted \
    rolled-back rotated renewed resized scaled drained cordoned rebooted patched tuned tested reviewed merged \
    rebased released tagged published documented removed added moved renamed split merged-in replaced \
    configured enabled disabled raised lowered increased decreased cleaned pruned archived restored backed-up \
    snapshotted mounted unmounted killed paused resumed retried debugged profiled traced measured benchmarked \
    refactored rewrote simplified deleted created wrote read checked verified confirmed approved rejected \
    postponed planned scheduled cancelled moved-up shipped announced explained asked answered suggested \
    proposed decided agreed disagreed escalated paged acknowledged resolved closed reopened triaged labelled \
    assigned handed-over took-over picked-up dropped kept switched chose preferred liked disliked wanted \
    needed used avoided forgot remembered learned taught showed shared sent received bought sold visited \
    called met cooked baked ran walked cycled drove flew travelled camped hiked swam played watched listened \
    painted built fixed-up cleaned-up sorted packed unpacked installed uninstalled updated pinned unpinned \
    vendored bumped locked unlocked exported imported indexed reindexed queried cached invalidated warmed \
    grepped tailed diffed staged committed pushed pulled fetched cloned bisected squashed signed \
    encrypted decrypted compressed rebuilt recompiled linted formatted stopped started watched \
    inspected audited hardened secured exposed hid throttled batched streamed sharded partitioned \
    replicated promoted demoted evicted expired refreshed reloaded redeployed reprovisioned \
    decommissioned provisioned bootstrapped seeded";

const VERBS_BASE: &str = "restart migrate upgrade fix check deploy revert rotate renew resize scale drain \
    reboot patch tune test review merge rebase release tag publish document remove add move rename split \
    replace configure enable disable raise lower increase clean prune archive restore back-up snapshot mount \
    unmount pause resume retry debug profile trace measure benchmark refactor rewrite simplify delete create \
    write read verify confirm approve plan schedule ship explain ask answer propose decide escalate page \
    resolve close triage assign keep switch choose use avoid remember learn share send update pin vendor bump \
    lock export import index query cache invalidate warm inspect tail grep diff stage commit push pull fetch \
    clone bisect squash sign encrypt decrypt compress rebuild recompile lint format run stop start watch";

const VERBS_S: &str = "prefers likes wants needs uses avoids keeps breaks fixes restarts checks runs \
    handles stores reads writes owns leads manages reviews expects blocks requires depends-on talks-to \
    calls sends receives caches indexes queries locks retries times-out fails crashes leaks hangs slows \
    drops rejects accepts returns logs warns reports tracks";

const VERBS_ING: &str = "restarting migrating upgrading fixing checking deploying reverting rotating \
    renewing scaling draining rebooting patching tuning testing reviewing merging rebasing releasing \
    tagging documenting removing moving renaming replacing configuring cleaning pruning archiving restoring \
    mounting debugging profiling tracing measuring refactoring rewriting deleting writing reading verifying \
    planning scheduling shipping indexing querying caching camping hiking cooking";

const ADJECTIVES: &str = "slow fast flaky stable noisy quiet broken stale fresh old new legacy modern \
    small large huge tiny simple complex clean messy safe unsafe risky critical minor major urgent \
    optional required default custom manual automatic nightly weekly daily hourly monthly primary secondary \
    local remote shared private public internal external read-only writable idle busy hot cold warm full \
    empty partial missing duplicate corrupt healthy unhealthy degraded green red yellow blocking \
    non-blocking async sync sequential parallel concurrent atomic durable expensive cheap free verbose \
    concise terse readable unreadable clear confusing obvious subtle strict lenient loose tight narrow wide \
    deep shallow short long brief detailed rough polished experimental production staging dev test \
    temporary permanent cached uncached compressed encrypted signed unsigned pinned floating outdated \
    deprecated current latest previous next first last better worse faster slower smaller bigger \
    happy tired busy relaxed excited worried careful calm sunny rainy snowy windy lovely great nice \
    terrible awful decent solid fragile robust predictable surprising weird odd strange familiar \
    bright dark heavy light soft hard smooth sharp blunt dull shiny dusty muddy sticky crowded \
    empty-handed lonely cheerful grumpy sleepy hungry thirsty sick healthy-ish brave shy proud honest \
    polite rude kind gentle strict-ish funny serious silly clever wise curious patient impatient \
    generous greedy lazy diligent punctual late early sudden gradual rapid steady shaky wobbly sturdy \
    flimsy bulky compact portable heavyweight lightweight ancient recent upcoming ongoing finished \
    unfinished pending approved rejected-ish blocked unblocked overdue ontime flawless buggy glitchy \
    laggy snappy sluggish chatty silent loud muted colourful grey pale vivid crisp blurry sharp-edged";

const ADVERBS: &str = "usually always never often rarely sometimes again twice quickly slowly carefully \
    manually automatically nightly weekly daily first last later soon now already still only mostly \
    partly fully barely clearly probably definitely eventually immediately gradually quietly";

const PROJECTS: &str = "atlas borealis cairn nimbus orion phoenix polaris quasar zephyr hermes apollo \
    artemis juno vesta ceres titan triton io europa ganymede callisto helios selene eos boreas notus \
    kestrel falcon heron osprey wren lark finch robin sparrow magpie raven condor pelican puffin \
    billing checkout search onboarding payments ledger inventory catalog gateway portal dashboard-v2 \
    mobile-app website docs-site data-platform ml-pipeline homelab infra";

const ROLES: &str = "tech lead manager product owner designer sre on-call engineer reviewer maintainer \
    architect director intern contractor consultant tester analyst founder cto ceo mentor";

const WHEN: &[&str] = &[
    "yesterday",
    "last week",
    "this morning",
    "last night",
    "on Monday",
    "on Friday",
    "over the weekend",
    "twice this month",
    "after lunch",
    "during the night",
    "last sprint",
    "two days ago",
    "earlier today",
    "at the end of the quarter",
];

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const WEEKDAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const HOST_PREFIXES: &[&str] = &[
    "web", "db", "cache", "edge", "build", "ci", "mail", "nfs", "backup", "worker", "gpu", "vpn",
    "proxy", "mon", "log", "git", "dev", "staging", "prod", "lb",
];

pub(super) struct Vocab {
    pub(super) names: Vec<&'static str>,
    pub(super) tech: Vec<&'static str>,
    pub(super) ops: Vec<&'static str>,
    pub(super) dev: Vec<&'static str>,
    pub(super) life: Vec<&'static str>,
    pub(super) past: Vec<&'static str>,
    pub(super) base: Vec<&'static str>,
    pub(super) pres: Vec<&'static str>,
    pub(super) ing: Vec<&'static str>,
    pub(super) adj: Vec<&'static str>,
    pub(super) adv: Vec<&'static str>,
    pub(super) projects: Vec<&'static str>,
    pub(super) roles: Vec<&'static str>,
    pub(super) people_lower: Vec<String>,
}

impl Vocab {
    pub(super) fn new() -> Vocab {
        let words = |s: &'static str| -> Vec<&'static str> { s.split_whitespace().collect() };
        let names = words(PERSON_NAMES);
        let v = Vocab {
            people_lower: names.iter().take(12).map(|n| n.to_lowercase()).collect(),
            names,
            tech: words(TECH),
            ops: words(OPS_NOUNS),
            dev: words(DEV_NOUNS),
            life: words(LIFE_NOUNS),
            past: words(VERBS_PAST),
            base: words(VERBS_BASE),
            pres: words(VERBS_S),
            ing: words(VERBS_ING),
            adj: words(ADJECTIVES),
            adv: words(ADVERBS),
            projects: words(PROJECTS),
            roles: words(ROLES),
        };
        // The generator writes JSON by hand: nothing may need escaping.
        for w in v.all_words() {
            assert!(
                !w.contains(['"', '\\']) && !w.chars().any(char::is_control),
                "word {w:?} needs escaping"
            );
        }
        v
    }

    fn all_words(&self) -> impl Iterator<Item = &&'static str> {
        [
            &self.names,
            &self.tech,
            &self.ops,
            &self.dev,
            &self.life,
            &self.past,
            &self.base,
            &self.pres,
            &self.ing,
            &self.adj,
            &self.adv,
            &self.projects,
            &self.roles,
        ]
        .into_iter()
        .flatten()
    }

    /// Distinct words in the lists (hosts, numbers, versions and tickets come on top).
    pub(super) fn distinct(&self) -> usize {
        let mut all: Vec<String> = self.all_words().map(|w| w.to_lowercase()).collect();
        all.sort();
        all.dedup();
        all.len()
    }

    /// Appends the expansion of `template`.
    fn expand(&self, out: &mut String, rng: &mut Rng, template: &str, tool: &str) {
        let mut rest = template;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let end = i + rest[i..].find('}').expect("templates close their braces");
            self.fill(out, rng, &rest[i + 1..end], tool);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
    }

    fn fill(&self, out: &mut String, rng: &mut Rng, key: &str, tool: &str) {
        match key {
            "N" => out.push_str(rng.pick(&self.names)),
            "T" => out.push_str(rng.pick(&self.tech)),
            "U" => out.push_str(tool),
            "O" => out.push_str(rng.pick(&self.ops)),
            "D" => out.push_str(rng.pick(&self.dev)),
            "L" => out.push_str(rng.pick(&self.life)),
            "V" => out.push_str(rng.pick(&self.past)),
            "B" => out.push_str(rng.pick(&self.base)),
            "S" => out.push_str(rng.pick(&self.pres)),
            "G" => out.push_str(rng.pick(&self.ing)),
            "A" => out.push_str(rng.pick(&self.adj)),
            "W" => out.push_str(rng.pick(&self.adv)),
            "X" => out.push_str(rng.pick(&self.projects)),
            "Y" => out.push_str(rng.pick(&self.roles)),
            "Z" => out.push_str(rng.pick(WHEN)),
            "M" => out.push_str(rng.pick(MONTHS)),
            "J" => out.push_str(rng.pick(WEEKDAYS)),
            "H" => {
                let _ = write!(out, "{}-{}", rng.pick(HOST_PREFIXES), 1 + rng.skewed(24));
            }
            "R" => {
                let _ = write!(out, "{}.{}.{}", rng.skewed(5), rng.below(30), rng.below(12));
            }
            "K" => {
                let _ = write!(out, "{}", 2 + rng.skewed(200));
            }
            "P" => {
                let prefix = ["INC", "OPS", "PR", "BUG"][rng.below(4) as usize];
                let _ = write!(out, "{prefix}-{}", 100 + rng.below(9_900));
            }
            other => panic!("unknown template key {other}"),
        }
    }

    /// One sentence from `template`, capitalized.
    fn sentence(&self, out: &mut String, rng: &mut Rng, template: &str) {
        let start = out.len();
        self.expand(out, rng, template, "");
        if let Some(c) = out[start..].chars().next()
            && c.is_ascii_lowercase()
        {
            out.replace_range(start..start + 1, &c.to_ascii_uppercase().to_string());
        }
    }

    /// An observation's text: 1–3 sentences, 15–60 words.
    fn observation_text(&self, out: &mut String, rng: &mut Rng, category: usize) {
        let start = out.len();
        let target = 15 + rng.skewed(46);
        let first = rng_pick_str(rng, TEMPLATES[category]);
        self.sentence(out, rng, first);
        let mut sentences = 1;
        let mut words = out[start..].split_whitespace().count();
        while words < target {
            if sentences < 3 && target - words >= 8 {
                out.push(' ');
                let more = rng_pick_str(rng, MORE);
                self.sentence(out, rng, more);
                sentences += 1;
            } else {
                out.pop(); // the full stop
                out.push(' ');
                let filler = rng_pick_str(rng, FILLERS);
                self.expand(out, rng, filler, "");
                out.push('.');
            }
            words = out[start..].split_whitespace().count();
        }
        if words > 60 {
            let cut = out[start..]
                .split_whitespace()
                .take(60)
                .collect::<Vec<_>>()
                .join(" ");
            out.truncate(start);
            out.push_str(cut.trim_end_matches(['.', ',', ';', ':']));
            out.push('.');
        }
    }

    /// One observation line in the exact format of `store::Observation`.
    pub(super) fn observation_line(
        &self,
        out: &mut String,
        rng: &mut Rng,
        n: u64,
        day: &str,
        ms: u64,
        session: Option<&str>,
    ) {
        let roll = rng.below(100);
        let mut acc = 0;
        let category = CATEGORIES
            .iter()
            .position(|(_, w)| {
                acc += w;
                roll < acc
            })
            .unwrap_or(0);
        let _ = write!(out, "{{\"id\":\"ob-{:016x}\",\"session_id\":", mix(n));
        match session {
            Some(s) => {
                let _ = write!(out, "\"{s}\"");
            }
            None => out.push_str("null"),
        }
        out.push_str(",\"observation\":\"");
        self.observation_text(out, rng, category);
        let kind = match (category, rng.below(10)) {
            (4, 0..=3) => "preference",
            (3, 0..=3) => "decision",
            (0, 0..=2) => "event",
            _ => "fact",
        };
        let source = match (session, rng.below(10)) {
            (Some(_), 0..=6) => "claude-code",
            (Some(_), _) => "codex",
            (None, 0..=6) => "cli",
            (None, _) => "import:notes.jsonl",
        };
        let priority = match rng.below(10) {
            0 => "high",
            1 | 2 => "low",
            _ => "medium",
        };
        let verdict = if rng.chance(5) { "hold" } else { "allow" };
        let write_confidence = (55 + rng.below(45)) as f64 / 100.0;
        let category_confidence = (30 + rng.below(70)) as f64 / 100.0;
        let merged = if rng.chance(3) { 2 + rng.below(3) } else { 1 };
        let _ = writeln!(
            out,
            "\",\"observation_type\":\"{kind}\",\"source\":\"{source}\",\"timestamp\":\"{}\",\"priority\":\"{priority}\",\
             \"write_verdict\":\"{verdict}\",\"write_confidence\":{write_confidence:?},\"category_id\":\"{}\",\
             \"category_confidence\":{category_confidence:?},\"taxonomy_version\":1,\"merged_count\":{merged}}}",
            timestamp(day, ms),
            CATEGORIES[category].0
        );
    }

    /// One slog line in the exact format of `slog::Entry`.
    pub(super) fn slog_line(&self, out: &mut String, rng: &mut Rng, n: u64, day: &str, ms: u64) {
        let action = rng.pick(SLOG_ACTIONS);
        let tool = rng.pick(SLOG_TOOLS);
        let _ = write!(
            out,
            "{{\"id\":\"sl-{:012x}\",\"ts\":\"{}\",\"action\":\"{action}\",\"tool\":\"{tool}\",\"detail\":\"",
            mix48(n),
            timestamp(day, ms)
        );
        let detail = rng_pick_str(rng, SLOG_DETAILS);
        self.expand(out, rng, detail, tool);
        out.push('"');
        if rng.chance(40) {
            out.push_str(",\"reason\":\"");
            let reason = rng_pick_str(rng, SLOG_REASONS);
            self.expand(out, rng, reason, tool);
            out.push('"');
        }
        if rng.chance(30) {
            let _ = write!(
                out,
                ",\"session\":\"ses-{:012x}\"",
                mix(0x51_0000 + n / 20) >> 16
            );
        }
        if rng.chance(60) {
            let _ = write!(
                out,
                ",\"actor\":\"{}\"",
                self.people_lower[rng.skewed(self.people_lower.len())]
            );
        }
        if rng.chance(30) {
            let _ = write!(
                out,
                ",\"tags\":[\"{}\"",
                rng.pick(&["infra", "prod", "staging", "security", "cost"])
            );
            if rng.chance(30) {
                let _ = write!(out, ",\"{}\"", rng.pick(&self.projects));
            }
            out.push(']');
        }
        out.push_str("}\n");
    }

    pub(super) fn adr_title(&self, rng: &mut Rng) -> String {
        let mut t = String::new();
        let template = rng_pick_str(rng, ADR_TITLES);
        self.sentence(&mut t, rng, template);
        t
    }

    /// An ADR as `cairn adr new` writes it (frontmatter, heading, three sections).
    pub(super) fn adr_text(
        &self,
        rng: &mut Rng,
        number: usize,
        title: &str,
        date: &str,
        supersedes: Option<usize>,
        superseded_by: Option<usize>,
    ) -> String {
        let status = if superseded_by.is_some() {
            "superseded"
        } else {
            match rng.below(20) {
                0..=11 => "accepted",
                12..=14 => "shipped",
                15 | 16 => "proposed",
                17 | 18 => "deprecated",
                _ => "rejected",
            }
        };
        let mut deciders_list = (0..1 + rng.below(3))
            .map(|_| self.people_lower[rng.below(self.people_lower.len() as u64) as usize].as_str())
            .collect::<Vec<_>>();
        deciders_list.sort_unstable();
        deciders_list.dedup();
        let tag = rng.pick(SLOG_TOOLS);
        let list = |n: Option<usize>| n.map_or("[]".to_string(), |n| format!("[{n}]"));
        let paragraph = |rng: &mut Rng| {
            let mut p = String::new();
            for i in 0..2 + rng.below(3) {
                if i > 0 {
                    p.push(' ');
                }
                let template = rng_pick_str(rng, if i == 0 { TEMPLATES[1] } else { MORE });
                self.sentence(&mut p, rng, template);
            }
            p
        };
        let context = paragraph(rng);
        let decision = paragraph(rng);
        let consequences = paragraph(rng);
        format!(
            "---\nnumber: {number}\ntitle: {title}\nstatus: {status}\ndate: {date}\ndeciders: [{}]\n\
             tags: [{tag}, ops]\nsupersedes: {}\nsuperseded-by: {}\n---\n# {number}. {title}\n\n\
             ## Context\n\n{context}\n\n## Decision\n\n{decision}\n\n## Consequences\n\n{consequences}\n",
            deciders_list.join(", "),
            list(supersedes),
            list(superseded_by),
        )
    }

    /// A MEMORY.md entry's text for a section.
    pub(super) fn memory_entry(&self, out: &mut String, rng: &mut Rng, section: usize) {
        // MEMORY_SECTIONS order, mapped to CATEGORIES order.
        let category = [4, 3, 1, 0, 6, 2, 5][section];
        let template = rng_pick_str(rng, TEMPLATES[category]);
        self.sentence(out, rng, template);
    }
}

fn rng_pick_str(rng: &mut Rng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len() as u64) as usize]
}

// The arena's page: one file, no build step, nothing loaded from elsewhere.
// Routes live in the address's hash: #/ (ladder), #/bot/NAME, #/matches?bot=NAME,
// #/replay/ID?step=N&view=public|all|SEAT, #/live/ID, #/competition. Every element a test reads
// carries a data-testid (docs/web.md).
"use strict";

const INGREDIENTS = ["salami", "pineapple", "mushroom", "pepper", "olive"];
const PERSONAL = {red: "salami", yellow: "pineapple", brown: "mushroom", green: "pepper",
                  purple: "olive"};
const SPECIALS = {bombastica: "Bombastica: 15 of any", minimale: "Minimale: 1 + 3 of a kind",
                  monotoni: "Monotoni: 1 + 6 of a kind", mixed: "one of each kind"};

// -- building blocks ---------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

async function getJSON(url) {
  const response = await fetch(url, {headers: {Accept: "application/json"}});
  const body = await response.json().catch(() => ({error: response.statusText}));
  if (!response.ok) {
    const error = new Error(body.error || response.statusText);
    error.status = response.status;
    error.body = body;
    throw error;
  }
  return body;
}

const fmt = (x, digits = 1) => (x === null || x === undefined) ? "–" : Number(x).toFixed(digits);
const enc = encodeURIComponent;

function ago(seconds) {
  const d = Math.max(0, Date.now() / 1000 - seconds);
  if (d < 60) return `${Math.round(d)} s ago`;
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return new Date(seconds * 1000).toLocaleDateString();
}

// -- cards -------------------------------------------------------------------------------

function orderParts(id) {
  const dash = id.indexOf("-");
  return {colour: id.slice(0, dash), kind: id.slice(dash + 1)};
}

function card(id, opts = {}) {
  const classes = ["card"];
  if (opts.small) classes.push("small");
  if (opts.turned) classes.push("turned");
  if (opts.focus) classes.push("focus");
  if (opts.mark) classes.push("mark-" + opts.mark);
  if (opts.back || id === null) {
    classes.push("back");
    return el("span", {class: classes.join(" "), title: opts.title || "face down"});
  }
  if (INGREDIENTS.includes(id)) {
    classes.push("ing", "ing-" + id);
    return el("span", {class: classes.join(" "), title: id}, el("b", {}, id));
  }
  if (id === "mamma-mia") {
    classes.push("mamma");
    return el("span", {class: classes.join(" "), title: "Mamma Mia!"}, el("b", {}, "Mamma Mia!"));
  }
  const {colour, kind} = orderParts(id);
  classes.push("order", "col-" + colour);
  const recipe = SPECIALS[kind] || `1 ${PERSONAL[colour]} + 4 ${kind}`;
  const label = SPECIALS[kind] ? kind : `4 ${kind}`;
  const badge = opts.mark === "baked" ? "✓" : opts.mark === "failed" ? "✗"
    : opts.mark === "deciding" ? "?" : null;
  return el("span", {class: classes.join(" "), title: `${id}: ${recipe}`},
            el("i", {class: "stripe"}), el("b", {}, label), el("small", {}, colour),
            badge && el("em", {class: "badge"}, badge));
}

function counts(list, opts = {}) {
  // Ingredient counts as one card per kind with its count.
  const out = [];
  list.forEach((n, k) => {
    if (n) out.push(el("span", {class: "stack"}, card(INGREDIENTS[k], opts), el("sup", {}, "×" + n)));
  });
  return out.length ? out : [el("span", {class: "muted"}, opts.empty || "nothing")];
}

// -- pages -------------------------------------------------------------------------------

let cleanups = [];
function onLeave(fn) { cleanups.push(fn); }
function every(ms, fn) { const t = setInterval(fn, ms); onLeave(() => clearInterval(t)); }

function show(...nodes) {
  document.getElementById("main").replaceChildren(...nodes.filter(Boolean));
}

function failure(error) {
  return el("div", {class: "panel error", testid: "error"}, error.message || String(error));
}

async function ladderPage(query) {
  let scope = Number(query.get("players") || 0);
  // Which of a bot's versions its line shows: its best (the default) or its newest.
  const by = query.get("by") === "newest" ? "newest" : "best";
  const holder = el("div", {});
  const render = async () => {
    let data;
    try { data = await getJSON(`/api/standings?by=${by}`); } catch (e) { holder.replaceChildren(failure(e)); return; }
    const scopes = data.scopes;
    if (!scopes.some(s => s.players === scope)) scope = 0;
    const current = scopes.find(s => s.players === scope) || {rows: [], rated: 0};
    const tabs = el("div", {class: "tabs", role: "tablist"}, scopes.map(s =>
      el("a", {href: s.players ? `#/?players=${s.players}` : "#/", role: "tab",
               class: s.players === scope ? "active" : "",
               "aria-selected": s.players === scope ? "true" : "false"},
         s.players ? `${s.players} players` : "All matches")));
    const here = scope ? `players=${scope}&` : "";
    const switcher = el("div", {class: "tabs", testid: "standings-by"},
      ["best", "newest"].map(b => el("a", {href: `#/?${here}by=${b}`, testid: `by-${b}`,
        class: b === data.by ? "active" : ""}, b === "best" ? "Best version" : "Newest version")));
    holder.replaceChildren(tabs, switcher, standingsTable(current, data.leagues.length > 0),
      ...(data.leagues.length ? [leaguesPanel(data.leagues, data.moves)] : []),
      el("p", {class: "muted", testid: "standings-by-note"},
        `Each bot is shown by its ${data.by} version${data.by === "best" ? " (highest rating)" : " (the one that first played last)"}.`),
      el("p", {class: "muted"}, `${current.rated} rated matches. Rating = μ − 3σ; the bar draws the interval μ ± 2σ, about 95% of the model's belief.`));
  };
  show(el("h1", {}, "Ladder"), holder);
  await render();
  every(4000, render);
}

// A ladder with leagues: the leagues in order, each with its boss, and who moved when.
function leaguesPanel(leagues, moves) {
  const order = el("p", {testid: "leagues"}, "Leagues, lowest first: ",
    leagues.map((g, i) => el("span", {testid: "league"}, i ? " < " : "", el("strong", {}, g.name),
      g.boss ? ` (boss ${g.boss}: ${g.bot})` : "")));
  const list = moves.length
    ? el("ul", {testid: "moves"}, moves.map(m => el("li", {testid: "move"},
        `${new Date(m.at * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC: `,
        el("a", {href: `#/bot/${enc(m.name)}`}, m.name), ` moved ${m.from} → ${m.to}: ${m.why}`)))
    : el("p", {class: "muted", testid: "moves"}, "No bot has moved up yet.");
  return el("section", {class: "panel", testid: "leagues-panel"}, el("h2", {}, "Leagues"), order, list);
}

function standingsTable(scope, leagues) {
  const rows = scope.rows;
  // The interval is the server's (low, high), as every reader of the standings shows it.
  const lo = Math.min(0, ...rows.map(r => r.low));
  const hi = Math.max(50, ...rows.map(r => r.high));
  const x = v => ((v - lo) / (hi - lo)) * 100;
  const body = rows.map(r => {
    const bar = el("span", {class: "interval"});
    const span = el("i", {});
    span.style.left = x(r.low) + "%";
    span.style.width = (x(r.high) - x(r.low)) + "%";
    const dot = el("b", {});
    dot.style.left = x(r.mu) + "%";
    bar.append(span, dot);
    return el("tr", {testid: "standings-row"},
      el("td", {class: "num"}, r.rank),
      el("td", {}, el("a", {href: `#/bot/${enc(r.name)}`, testid: "bot-link"}, r.name),
        r.suspended ? el("span", {class: "status status-suspended", testid: "suspended",
                                  title: r.suspended}, " suspended") : null),
      leagues ? el("td", {testid: "standing-league"}, r.league || "-") : null,
      el("td", {testid: "standing-version", title: `${r.versions} rated version(s)`},
        (r.version || "-") + (r.versions > 1 ? ` (of ${r.versions})` : "")),
      el("td", {class: "num strong"}, fmt(r.rating)),
      el("td", {class: "num"}, `${fmt(r.mu)} ± ${fmt(r.sigma)}`),
      el("td", {class: "wide"}, bar),
      el("td", {class: "num"}, r.games),
      el("td", {class: "num"}, `${r.wins} (${r.games ? Math.round(100 * r.wins / r.games) : 0}%)`),
      el("td", {class: "num"}, fmt(r.pizzas, 2)));
  });
  return el("div", {class: "scroll"}, el("table", {class: "grid", testid: "standings"},
    el("thead", {}, el("tr", {}, ["#", "Bot", ...(leagues ? ["League"] : []), "Version", "Rating", "μ ± σ",
                                  "Uncertainty", "Games", "Wins", "Pizzas / match"].map(h =>
      el("th", {class: h === "Uncertainty" ? "wide" : ""}, h)))),
    el("tbody", {}, body.length ? body : el("tr", {}, el("td", {colspan: leagues ? 10 : 9, class: "muted"},
      "No rated match yet: the standings fill as ladder matches end.")))));
}

function matchList(matches) {
  if (!matches.length) return el("p", {class: "muted", testid: "match-list"}, "No match yet.");
  return el("ul", {class: "matches", testid: "match-list"}, matches.map(m => {
    const href = m.live ? `#/live/${enc(m.match)}` : `#/replay/${enc(m.match)}`;
    const status = m.live ? "live" : m.voided ? "voided" : m.status;
    return el("li", {title: m.voided ? `voided by ${m.voided_by}: ${m.voided}` : ""},
      el("a", {href, testid: "match-link", class: "match-link", "data-status": status},
        el("span", {class: "status status-" + status}, status),
        el("span", {class: "seats"}, m.names.map((n, i) => el("span",
          {class: m.winners.includes(i) ? "winner" : ""},
          n, m.delivered ? el("small", {}, " " + m.delivered[i]) : null))),
        el("span", {class: "muted when"}, `${m.players}p · ${ago(m.created)}`)));
  }));
}

async function matchesPage(query) {
  const bot = query.get("bot") || "";
  const input = el("input", {type: "search", placeholder: "filter by bot", value: bot,
                             "aria-label": "bot", testid: "match-filter"});
  const form = el("form", {class: "filter", onsubmit: e => {
    e.preventDefault();
    location.hash = input.value ? `#/matches?bot=${enc(input.value.trim())}` : "#/matches";
  }}, input, el("button", {type: "submit"}, "Filter"),
     bot ? el("a", {href: "#/matches"}, "all bots") : null);
  const holder = el("div", {});
  const render = async () => {
    try {
      const data = await getJSON(`/api/matches?limit=50${bot ? "&bot=" + enc(bot) : ""}`);
      holder.replaceChildren(matchList(data.matches));
    } catch (e) { holder.replaceChildren(failure(e)); }
  };
  show(el("h1", {}, bot ? `Matches of ${bot}` : "Matches"), form, holder);
  await render();
  every(3000, render);
}

function ratingPlot(history) {
  const W = 640, H = 220, P = 34;
  if (history.length < 2) return el("p", {class: "muted"}, "The plot appears after two rated matches.");
  const lo = Math.min(...history.map(p => p.rating), ...history.map(p => p.low)) - 1;
  const hi = Math.max(...history.map(p => p.high)) + 1;
  const X = i => P + (i / (history.length - 1)) * (W - 2 * P);
  const Y = v => H - P + 10 - ((v - lo) / (hi - lo)) * (H - 2 * P);
  // The band is the standings' interval (low to high) after each match.
  const band = history.map((p, i) => `${X(i)},${Y(p.high)}`).concat(
    history.map((p, i) => `${X(i)},${Y(p.low)}`).reverse()).join(" ");
  const line = key => history.map((p, i) => `${i ? "L" : "M"}${X(i)},${Y(p[key])}`).join("");
  const ticks = [lo, (lo + hi) / 2, hi].map(v => svg("text", {x: 2, y: Y(v) + 4, class: "tick"},
    document.createTextNode(fmt(v, 0))));
  return svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "plot", role: "img",
                     "aria-label": "rating over time", "data-testid": "rating-plot"},
    svg("polygon", {points: band, class: "band"}),
    svg("path", {d: line("mu"), class: "mu"}),
    svg("path", {d: line("rating"), class: "rating"}),
    ...ticks,
    svg("text", {x: W - P, y: 14, class: "legend", "text-anchor": "end"},
        document.createTextNode("μ ± 2σ (band), rating μ − 3σ (line) over the last matches")));
}

async function botPage(name) {
  show(el("h1", {}, name), el("p", {class: "muted"}, "Loading…"));
  let data;
  try { data = await getJSON(`/api/bots/${enc(name)}`); } catch (e) { show(el("h1", {}, name), failure(e)); return; }
  const o = data.overall;
  const summary = o ? el("div", {class: "facts"},
      fact("Rank", "#" + o.rank), fact("Rating", fmt(o.rating)), fact("μ ± σ", `${fmt(o.mu)} ± ${fmt(o.sigma)}`),
      fact("Games", o.games), fact("Wins", o.wins), fact("Pizzas / match", fmt(o.pizzas, 2)),
      o.league ? fact("League", o.league) : null)
    : el("p", {class: "muted"}, "Not rated yet.");
  // Its moves up through the leagues (a ladder with leagues), newest first.
  const moves = data.moves.length ? el("section", {class: "panel"}, el("h2", {}, "Leagues"),
    el("ul", {testid: "bot-moves"}, data.moves.map(m => el("li", {testid: "move"},
      `${new Date(m.at * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC: moved ${m.from} → ${m.to}: ${m.why}`))))
    : null;
  const byPlayers = el("table", {class: "grid", testid: "by-players"},
    el("thead", {}, el("tr", {}, ["Players", "Rating", "μ ± σ", "Games", "Wins", "Pizzas / match"].map(h => el("th", {}, h)))),
    el("tbody", {}, data.by_players.map(r => el("tr", {},
      el("td", {class: "num"}, r.players), el("td", {class: "num"}, fmt(r.rating)),
      el("td", {class: "num"}, `${fmt(r.mu)} ± ${fmt(r.sigma)}`), el("td", {class: "num"}, r.games),
      el("td", {class: "num"}, r.wins), el("td", {class: "num"}, fmt(r.pizzas, 2))))));
  const day = t => t === null ? "–" : new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ");
  const versions = el("table", {class: "grid", testid: "versions"},
    el("thead", {}, el("tr", {}, ["Version", "Rating", "Interval", "Games", "Wins", "First played", "Last played"].map(h => el("th", {}, h)))),
    el("tbody", {}, data.versions.map(v => el("tr", {testid: "version-row"},
      el("td", {}, v.version || "-"), el("td", {class: "num"}, fmt(v.rating)),
      el("td", {class: "num"}, `${fmt(v.low)} … ${fmt(v.high)}`), el("td", {class: "num"}, v.games),
      el("td", {class: "num"}, v.wins), el("td", {}, day(v.first_played)), el("td", {}, day(v.last_played))))));
  const opponents = el("table", {class: "grid", testid: "opponents"},
    el("thead", {}, el("tr", {}, ["Opponent", "Matches", "Ahead", "Tied", "Behind"].map(h => el("th", {}, h)))),
    el("tbody", {}, data.opponents.map(r => el("tr", {},
      el("td", {}, el("a", {href: `#/bot/${enc(r.name)}`}, r.name)), el("td", {class: "num"}, r.games),
      el("td", {class: "num good"}, r.ahead), el("td", {class: "num"}, r.tied),
      el("td", {class: "num bad"}, r.behind)))));
  const s = data.suspended;
  const suspended = s ? el("p", {class: "notice", testid: "bot-suspended"},
      s.reason === "quarantine"
        ? `Suspended by the server (quarantine): most of its last matches were played by the default policy. An operator reinstates it.`
        : `Suspended by ${s.by}: ${s.reason}`) : null;
  show(el("h1", {}, name, " ", el("a", {class: "small-link", href: `#/matches?bot=${enc(name)}`}, "all matches")),
    suspended, summary, moves, decisionFacts(data.decisions),
    el("section", {class: "panel"}, el("h2", {}, "Versions, each rated on its own"), el("div", {class: "scroll"}, versions)),
    el("section", {class: "panel"}, el("h2", {}, "Rating over time"), ratingPlot(data.history)),
    el("div", {class: "two"},
      el("section", {class: "panel"}, el("h2", {}, "By player count"), el("div", {class: "scroll"}, byPlayers)),
      el("section", {class: "panel"}, el("h2", {}, "Against each opponent"), el("div", {class: "scroll"}, opponents))),
    el("section", {class: "panel"}, el("h2", {}, "Recent matches"), matchList(data.matches)));
}

// Its decision times on this server since it started (null: none here yet).
function decisionFacts(d) {
  if (!d) return null;
  return el("div", {class: "facts", testid: "decision-times"},
    fact("Decisions answered", d.answered), fact("Mean answer", d.mean_ms === null ? "–" : `${fmt(d.mean_ms, 0)} ms`),
    fact("Slowest answer", d.slowest_ms === null ? "–" : `${fmt(d.slowest_ms, 0)} ms`),
    fact("Deadline misses", d.deadline_misses));
}

function fact(label, value) {
  return el("div", {class: "fact"}, el("small", {}, label), el("b", {}, value));
}

// -- the table of a game: shared by the replay and the live view -------------------------

function board(pic, opts) {
  // pic: {round, phase, oven, revealed, marks, focus, table, used, supply, holder,
  //       seats: [{name, colour, hand_size, orders_in_hand, hand, orders, waiter, delivered}]}
  const resolving = pic.phase === "resolve";
  const oven = pic.oven.map((c, i) => card(c, {
    turned: resolving && pic.revealed !== null && i < pic.revealed,
    mark: pic.marks ? pic.marks[String(i)] : null, focus: pic.focus === i}));
  const seats = pic.seats.map((s, i) => {
    const faceUp = opts.reveal(i) && s.hand;
    const size = s.hand_size !== undefined ? s.hand_size : s.hand.reduce((a, b) => a + b, 0) + s.orders.length;
    const hand = faceUp
      ? [...counts(s.hand, {small: true, empty: "no ingredients"}), ...s.orders.map(o => card(o, {small: true}))]
      : Array.from({length: size}, () => card(null, {small: true, back: true}));
    return el("div", {class: `seat col-edge-${s.colour}` + (pic.actor === i || pic.to_act === i ? " acting" : ""),
                      testid: "seat"},
      el("div", {class: "seat-head"},
        el("span", {class: "dot col-bg-" + s.colour}), el("b", {}, s.name || `seat ${i}`),
        el("small", {class: "muted"}, ` ${s.colour}`),
        pic.holder === i ? el("span", {class: "mamma-badge", title: "holds the Mamma Mia! card"}, "Mamma Mia!") : null,
        el("span", {class: "score", title: "pizzas delivered"}, `${s.delivered.length} pizza${s.delivered.length === 1 ? "" : "s"}`)),
      el("div", {class: "hand", "aria-label": "hand"}, hand),
      el("div", {class: "seat-foot muted"}, `hand ${size} · waiter ${s.waiter}`),
      el("div", {class: "delivered"}, s.delivered.map(o => card(o, {small: true}))));
  });
  return el("div", {class: "board"},
    el("div", {class: "status-line"},
      el("span", {}, `Round ${pic.round}`), el("span", {}, pic.phase === "resolve" ? "resolving the oven" : pic.phase === "over" ? "game over" : "turns"),
      el("span", {}, `supply ${pic.supply}`), el("span", {}, `used ${pic.used}`)),
    el("section", {class: "oven", testid: "oven"}, el("h3", {}, `Oven (${pic.oven.length})`),
      el("div", {class: "cards"}, oven.length ? oven : el("span", {class: "muted"}, "empty"))),
    resolving ? el("section", {class: "table-row"}, el("h3", {}, "Table"), el("div", {class: "cards"}, counts(pic.table, {empty: "empty"}))) : null,
    el("section", {class: "seats"}, seats));
}

function scoresTable(names, colours, scores) {
  if (!scores) return null;
  const order = names.map((_, i) => i).sort((a, b) => scores.ranks[a] - scores.ranks[b] || a - b);
  return el("table", {class: "grid scores", testid: "scores"},
    el("thead", {}, el("tr", {}, ["Rank", "Player", "Pizzas", "Ingredients in hand"].map(h => el("th", {}, h)))),
    el("tbody", {}, order.map(i => el("tr", {class: scores.winners.includes(i) ? "winner" : ""},
      el("td", {class: "num"}, scores.ranks[i]),
      el("td", {}, el("span", {class: "dot col-bg-" + colours[i]}), " ", names[i]),
      el("td", {class: "num"}, scores.pizzas[i]),
      el("td", {class: "num"}, scores.ingredients ? scores.ingredients[i] : "–")))));
}

// -- replay ------------------------------------------------------------------------------

async function replayPage(id, query) {
  show(el("h1", {}, "Replay"), el("p", {class: "muted"}, "Loading…"));
  let data;
  try { data = await getJSON(`/api/replay/${enc(id)}`); }
  catch (e) {
    if (e.status === 409) { location.replace(`#/live/${enc(id)}`); return; }
    show(el("h1", {}, "Replay"), failure(e)); return;
  }
  const total = data.steps.length;
  let step = Math.min(total, Math.max(1, Number(query.get("step")) || 1));
  let viewpoint = query.get("view") || "public";
  const position = el("span", {class: "position", testid: "replay-position"});
  const slider = el("input", {type: "range", min: 1, max: total, value: step, testid: "replay-slider",
                              "aria-label": "step", oninput: () => go(Number(slider.value))});
  const caption = el("p", {class: "caption", testid: "replay-caption"});
  const stage = el("div", {});
  const link = el("a", {class: "small-link", testid: "replay-link"}, "link to this step");
  const choose = el("select", {"aria-label": "whose cards", testid: "replay-view",
                               onchange: () => { viewpoint = choose.value; go(step); }},
    el("option", {value: "public"}, "Public view: hands face down"),
    data.names.map((n, i) => el("option", {value: String(i)}, `${n}'s view`)),
    el("option", {value: "all"}, "Everything"));
  choose.value = viewpoint;
  const button = (label, testid, to, title) => el("button", {type: "button", testid, title,
                                                              onclick: () => go(to())}, label);
  const controls = el("div", {class: "controls"},
    button("«", "replay-first", () => 1, "first (Home)"),
    button("◀", "replay-prev", () => step - 1, "previous (←)"),
    position,
    button("▶", "replay-next", () => step + 1, "next (→)"),
    button("»", "replay-last", () => total, "last (End)"),
    slider);
  function go(to) {
    step = Math.min(total, Math.max(1, to));
    const s = data.steps[step - 1];
    position.textContent = `${step} / ${total}`;
    slider.value = String(step);
    caption.textContent = s.text;
    const reveal = i => viewpoint === "all" || viewpoint === String(i);
    const seats = s.seats.map((seat, i) => ({...seat, name: data.names[i], colour: data.colours[i]}));
    stage.replaceChildren(...[board({...s, seats}, {reveal}),
      step === total ? scoresTable(data.names, data.colours, data.scores) : null].filter(Boolean));
    const hash = `#/replay/${enc(id)}?step=${step}${viewpoint !== "public" ? "&view=" + viewpoint : ""}`;
    link.href = hash;
    history.replaceState(null, "", hash);
  }
  const keys = e => {
    if (e.target instanceof HTMLInputElement && e.target.type !== "range") return;
    const moves = {ArrowRight: step + 1, ArrowLeft: step - 1, Home: 1, End: total};
    if (e.key in moves) { e.preventDefault(); go(moves[e.key]); }
  };
  document.addEventListener("keydown", keys);
  onLeave(() => document.removeEventListener("keydown", keys));
  const who = data.names.map((n, i) => el("span", {class: "who"}, el("span", {class: "dot col-bg-" + data.colours[i]}), n));
  show(el("div", {class: "replay", testid: "replay"},
    el("h1", {}, "Replay ", el("small", {class: "muted"}, data.match)),
    el("p", {class: "players"}, who, data.status === "aborted" ? el("span", {class: "status status-aborted"}, "aborted: " + (data.reason || "")) : null),
    el("div", {class: "toolbar"}, choose, link), controls, caption, stage));
  go(step);
}

// -- live --------------------------------------------------------------------------------

function describe(e, names) {
  const who = i => names[i] || `seat ${i}`;
  switch (e.kind) {
    case "turn": {
      let t = e.ingredient ? `${who(e.seat)} plays ${e.count} ${e.ingredient}` : `${who(e.seat)} passes`;
      if (e.order) t += ` and ${e.order}`;
      if (e.mamma_mia) t += ", draws the Mamma Mia! card";
      else if (e.draw) t += `, draws ${e.drawn} from the ${e.draw}`;
      return t;
    }
    case "round_started": return `Round ${e.round}: ${who(e.seat)} begins`;
    case "round_ended": return `Round ${e.round} ends${e.stalemate ? " (stalemate)" : ""}: the oven is turned over`;
    case "baked": return `${e.order} of ${who(e.seat)} is baked`;
    case "failed": return `${e.order} of ${who(e.seat)} ${e.declined ? "is declined" : "fails"}`;
    case "game_over": return "Game over";
    case "defaulted": return `${who(e.seat)} was too slow (${e.reason}): the server played for it`;
    default: return e.kind;
  }
}

function livePage(id) {
  const status = el("span", {class: "live-status", testid: "live-status"}, "connecting…");
  const stage = el("div", {});
  const log = el("ol", {class: "log", testid: "live-log", reversed: true});
  const events = [];
  let after = 0;
  show(el("div", {class: "live", testid: "live"},
    el("h1", {}, "Live ", el("small", {class: "muted"}, id)),
    el("p", {}, el("span", {class: "pulse"}), status),
    stage, el("section", {class: "panel"}, el("h2", {}, "What happened"), log)));
  let source = null;
  const render = msg => {
    const v = msg.view;
    const names = v.seats.map(s => s.name);
    for (const e of msg.events) if (e.sequence > after) events.push(e);
    after = msg.sequence;
    while (events.length > 60) events.shift();
    const turn = v.to_act !== null && v.to_act !== undefined ? ` · ${v.deciding ? "deciding" : "turn of"} ${names[v.to_act] || "seat " + v.to_act}` : "";
    status.textContent = msg.final ? `${msg.final.status} · final scores below` : `${msg.status} · round ${v.round}${turn} · ${msg.sequence} events`;
    status.dataset.sequence = String(msg.sequence);
    status.dataset.status = msg.final ? msg.final.status : msg.status;
    const pic = {...v, marks: null, focus: null, actor: null};
    const finalScores = msg.final ? scoresTable(names, v.colours, {
      ranks: msg.final.ranks, pizzas: msg.final.delivered, winners: msg.final.winners}) : null;
    stage.replaceChildren(...[board(pic, {reveal: () => false}), finalScores,
      msg.final ? el("p", {}, el("a", {href: `#/replay/${enc(id)}`, testid: "live-replay"}, "Open the replay")) : null].filter(Boolean));
    log.replaceChildren(...events.slice().reverse().map(e => el("li", {}, describe(e, names))));
  };
  const fallback = async () => {
    try { render(await getJSON(`/api/live/${enc(id)}`)); }
    catch (e) {
      if (e.body && e.body.replay) { location.replace(e.body.replay); return; }
      stage.replaceChildren(failure(e)); status.textContent = "not available";
    }
  };
  source = new EventSource(`/api/live/${enc(id)}/stream`);
  source.onmessage = m => render(JSON.parse(m.data));
  source.addEventListener("end", () => { source.close(); });
  source.onerror = () => { source.close(); fallback(); };
  onLeave(() => source && source.close());
}

// -- the competition (shown only when the server runs one) ------------------------------

function until(at, now) {
  const d = Math.max(0, Math.round(at - now));
  const h = Math.floor(d / 3600), m = Math.floor((d % 3600) / 60), sec = d % 60;
  const two = x => String(x).padStart(2, "0");
  return h ? `${h}:${two(m)}:${two(sec)}` : `${m}:${two(sec)}`;
}

function schedule(c, skew) {
  // The countdowns run on the server's clock: `skew` is how far the browser's is off.
  const now = Date.now() / 1000 - skew;
  const reached = new Set(c.stamps.map(t => t.phase));
  const current = c.phases.indexOf(c.phase);
  return el("table", {class: "grid", testid: "competition-schedule"},
    el("thead", {}, el("tr", {}, ["Phase", "Starts", "", "What it allows"].map(h => el("th", {}, h)))),
    el("tbody", {}, c.schedule.map(p => {
      const index = c.phases.indexOf(p.phase);
      const stamp = c.stamps.find(t => t.phase === p.phase);
      let when;
      if (stamp) when = `began ${ago(stamp.at + skew)}`;
      else if (index < current) when = "skipped";
      else if (p.starts === null) when = "not scheduled";
      else when = el("span", {testid: "countdown", "data-phase": p.phase}, `in ${until(p.starts, now)}`);
      return el("tr", {class: p.phase === c.phase ? "current" : "", testid: "schedule-row",
                       "data-phase": p.phase},
        el("td", {}, p.phase),
        el("td", {class: "num"}, p.starts === null ? "–" : new Date((p.starts + skew) * 1000).toLocaleTimeString()),
        el("td", {}, when),
        el("td", {class: "muted"}, p.rules));
    })));
}

function finalTable(c) {
  const rows = c.standings;
  const lo = Math.min(0, ...rows.map(r => r.low));
  const hi = Math.max(50, ...rows.map(r => r.high));
  const x = v => ((v - lo) / (hi - lo)) * 100;
  return el("div", {class: "scroll"}, el("table", {class: "grid", testid: "final-table"},
    el("thead", {}, el("tr", {}, ["#", "Finalist", "μ ± σ", "Interval", "P(above next)",
                                  "Sets vs next", "Evidence", "Matches", "Wins", "Absent"].map((h, i) => el("th", {class: i === 3 ? "wide" : ""}, h)))),
    el("tbody", {}, rows.map(r => {
      const bar = el("span", {class: "interval"});
      const span = el("i", {});
      span.style.left = x(r.low) + "%";
      span.style.width = (x(r.high) - x(r.low)) + "%";
      const dot = el("b", {});
      dot.style.left = x(r.mu) + "%";
      bar.append(span, dot);
      return el("tr", {testid: "final-row"},
        el("td", {class: "num"}, r.rank),
        el("td", {}, r.name),
        el("td", {class: "num"}, `${fmt(r.mu)} ± ${fmt(r.sigma)}`),
        el("td", {class: "wide", title: `${fmt(r.low)} – ${fmt(r.high)}`}, bar),
        el("td", {class: "num"}, r.p_better === null ? "–" : `${Math.round(100 * r.p_better)}%`),
        el("td", {class: "num", title: "duplicate sets won–lost against the next finalist"},
           r.rank === rows.length ? "–" : `${r.sets_won}–${r.sets_lost}`),
        el("td", {class: "num", title: "the sets' evidence that it is the better (20 is 95%)"},
           r.evidence === null ? "–"
             : r.evidence < 1000 ? fmt(r.evidence) : r.evidence.toExponential(1)),
        el("td", {class: "num"}, r.matches),
        el("td", {class: "num"}, r.wins),
        el("td", {class: "num"}, r.absent));
    }))));
}

function finalsMatches(c) {
  return el("ul", {class: "matches", testid: "finals-matches"}, c.matches.map(m => {
    const ended = m.status !== "running";
    return el("li", {},
      el(ended ? "a" : "span", {href: ended ? `#/replay/${enc(m.match)}` : null,
                                testid: "finals-replay-link", class: "match-link", "data-status": m.status},
        el("span", {class: "status status-" + m.status}, m.status),
        el("span", {class: "finalists"}, m.names.map((n, i) => el("span",
          {class: m.ranks[i] === 1 ? "winner" : ""}, n))),
        el("span", {class: "muted when"}, `round ${m.round + 1}`)));
  }));
}

async function competitionPage() {
  const holder = el("div", {});
  let last = null, skew = 0;
  const draw = () => {
    const c = last;
    if (!c) {
      holder.replaceChildren(el("p", {class: "muted", testid: "no-competition"},
        "This server runs no competition."));
      return;
    }
    const parts = [
      el("p", {}, "Phase: ", el("strong", {testid: "competition-phase"}, c.phase),
        el("span", {class: "muted"}, ` — ${c.rules}`)),
      schedule(c, skew),
    ];
    if (c.phase === "registration" || c.phase === "ladder") {
      parts.push(el("p", {testid: "competition-ladder"}, "The ladder decides the finals' field: ",
        el("a", {href: "#/"}, "its standings"), "."));
    }
    if (c.field.length) {
      parts.push(el("p", {testid: "competition-field"}, `Finalists: ${c.field.join(", ")}`));
    }
    if (["finals", "closed"].includes(c.phase) || c.played) {
      const pct = c.planned ? Math.min(100, Math.round(100 * c.played / c.planned)) : 0;
      const bar = el("span", {class: "progress"}, el("i", {}));
      bar.firstChild.style.width = pct + "%";
      parts.push(el("p", {testid: "finals-progress"},
        `Finals: ${c.played} of at most ${c.planned} matches played `, bar));
    }
    if (c.released) {
      parts.push(el("h2", {}, "Final table"),
        el("p", {class: "muted", testid: "final-reason"},
          `The finals stopped: ${c.final_reason}. The bar draws each finalist's interval; `
          + `P(above next) is the chance it is better than the next line's finalist.`),
        finalTable(c), el("h2", {}, "Finals matches"), finalsMatches(c));
    } else if (["finals", "closed"].includes(c.phase)) {
      parts.push(el("p", {class: "panel", testid: "results-held"},
        "The finals' results are held until the organiser releases them."));
    }
    holder.replaceChildren(...parts);
  };
  const render = async () => {
    try {
      last = (await getJSON("/api/competition")).competition;
      if (last) skew = Date.now() / 1000 - last.now;
    } catch (e) { holder.replaceChildren(failure(e)); return; }
    draw();
  };
  show(el("h1", {testid: "competition-name"}, "Competition"), holder);
  await render();
  if (last) document.querySelector("[data-testid=competition-name]").textContent = `Competition ${last.name}`;
  every(1000, draw);
  every(3000, render);
}

async function competitionNav() {
  // The tab shows only when the server runs a competition.
  try {
    const data = await getJSON("/api/competition");
    document.querySelector("[data-nav=competition]").hidden = !data.competition;
  } catch (e) { /* the page works without it */ }
}

// -- routing -----------------------------------------------------------------------------

function route() {
  for (const fn of cleanups) fn();
  cleanups = [];
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search] = hash.split("?");
  const query = new URLSearchParams(search || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active",
    (parts[0] || "ladder") === a.dataset.nav || (a.dataset.nav === "matches" && ["replay", "live"].includes(parts[0]))));
  window.scrollTo(0, 0);
  if (parts[0] === "bot" && parts[1]) return botPage(parts[1]);
  if (parts[0] === "matches") return matchesPage(query);
  if (parts[0] === "replay" && parts[1]) return replayPage(parts[1], query);
  if (parts[0] === "live" && parts[1]) return livePage(parts[1]);
  if (parts[0] === "competition") return competitionPage();
  if (parts[0] === "play") return playPage();
  return ladderPage(query);
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
window.addEventListener("DOMContentLoaded", competitionNav);

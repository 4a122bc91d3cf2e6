// The play view, #/play: a person plays one seat of a match over the WebSocket /api/play
// (server/web/play.py; the messages are in docs/web.md). Uses the page's helpers of
// app.js (el, show, card, counts, describe, scoresTable, onLeave, every, enc).
// The seat token is kept in sessionStorage, so that a reload takes the same seat again.
"use strict";

const PLAY_KEY = "mammamia.play";

function playPage() {
  const saved = JSON.parse(sessionStorage.getItem(PLAY_KEY) || "null");
  if (saved && saved.token) return playSeat({type: "resume", token: saved.token, after: 0});
  const players = el("select", {id: "play-players", testid: "play-players"},
    [2, 3, 4, 5].map(n => el("option", {value: n}, `${n} players`)));
  // An opponent is a built-in bot, or a bot entered in the ladder by its name (the
  // names of the ladder's standings are offered).
  const known = el("datalist", {id: "play-ladder-bots"});
  getJSON("/api/standings").then(s => known.replaceChildren(
    ...[...new Set(s.scopes.flatMap(scope => scope.rows.map(r => r.name)))].map(n => el("option", {value: n}))))
    .catch(() => {});
  const opponents = el("div", {class: "play-opponents"});
  const opponent = i => {
    const name = el("input", {type: "text", testid: "play-opponent-name", list: "play-ladder-bots",
      placeholder: "the bot's name", "aria-label": `opponent ${i + 1}: ladder bot's name`, hidden: true});
    const kind = el("select", {testid: "play-opponent", "aria-label": `opponent ${i + 1}`},
      el("option", {value: "random"}, "random (built-in)"),
      el("option", {value: "eager"}, "eager (built-in)"),
      el("option", {value: "ladder"}, "a bot entered in the ladder…"));
    kind.addEventListener("change", () => { name.hidden = kind.value !== "ladder"; if (!name.hidden) name.focus(); });
    return el("label", {class: "play-opponent"}, `Opponent ${i + 1} `, kind, name);
  };
  const drawOpponents = () => {
    const n = Number(players.value) - 1;
    opponents.replaceChildren(...Array.from({length: n}, (_, i) => opponent(i)));
  };
  players.addEventListener("change", drawOpponents);
  drawOpponents();
  const name = el("input", {type: "text", id: "play-name", testid: "play-name", maxlength: 40,
    autocomplete: "nickname", value: localStorage.getItem(PLAY_KEY + ".name") || ""});
  // Shown only when the server keeps a people's table (GET /api/people).
  const forTable = el("input", {type: "checkbox", id: "play-for-table", testid: "play-for-table"});
  const tableChoice = el("p", {hidden: true}, forTable, " ",
    el("label", {for: "play-for-table"}, "Play for the people's table (your name is needed; no hints)"));
  const people = el("section", {class: "panel", testid: "people-table", hidden: true});
  getJSON("/api/people").then(t => {
    if (!t.enabled) return;
    tableChoice.hidden = false;
    people.hidden = false;
    people.replaceChildren(...peopleTable(t));
  }).catch(() => {});
  const start = el("button", {type: "button", testid: "play-start", onclick: () => {
    const picked = [...opponents.querySelectorAll("label.play-opponent")].map(l => {
      const kind = l.querySelector("select").value;
      return kind === "ladder" ? {ladder: l.querySelector("input").value.trim()} : kind;
    });
    const who = name.value.trim();
    if (who) localStorage.setItem(PLAY_KEY + ".name", who);
    playSeat({type: "start", players: Number(players.value), opponents: picked, name: who,
      table: !tableChoice.hidden && forTable.checked});
  }}, "Start a game");
  show(el("div", {class: "play", testid: "play"},
    el("h1", {}, "Play"),
    el("p", {class: "muted"}, "Play one seat against the server's built-in bots, or against bots ",
      "entered in the ladder. Your games never change the bots' ladder."),
    el("section", {class: "panel"}, el("label", {for: "play-players"}, "Players "), players,
      opponents, known, el("p", {}, el("label", {for: "play-name"}, "Your name "), name),
      tableChoice, start),
    people));
}

// The people's table: people ranked by the ladder's rating model, apart from the bots'
// standings; the bots they played, rated on this table, below.
function peopleTable(t) {
  const row = (line, rank) => el("tr", {testid: rank ? "people-row" : "people-opponent"},
    el("td", {class: "num"}, rank || ""), el("td", {}, line.name, line.kind === "person" ? "" : ` (${line.kind === "ladder" ? "ladder bot" : "built-in bot"})`),
    el("td", {class: "num"}, line.rating.toFixed(1)), el("td", {class: "num"}, `${line.mu.toFixed(1)} ± ${line.sigma.toFixed(1)}`),
    el("td", {class: "num"}, line.games), el("td", {class: "num"}, line.wins));
  const head = el("thead", {}, el("tr", {}, ["#", "Name", "Rating", "μ ± σ", "Games", "Wins"].map(h => el("th", {}, h))));
  return [el("h2", {}, "The people's table"),
    el("p", {class: "muted"}, `${t.matches} game${t.matches === 1 ? "" : "s"} played for it. People are rated by the name they give, `,
      "as the ladder rates bots (μ − 3σ), apart from the bots' standings."),
    t.people.length ? el("div", {class: "scroll"}, el("table", {class: "grid"}, head,
      el("tbody", {}, t.people.map((line, i) => row(line, line.rank || i + 1)),
        t.opponents.map(line => row(line, null))))) : el("p", {class: "muted"}, "Nobody has played for it yet.")];
}

function playSeat(first) {
  const status = el("p", {class: "play-status", testid: "play-status", role: "status"}, "connecting…");
  const clock = el("p", {class: "play-clock", testid: "play-clock"});
  const stage = el("div", {});
  const choice = el("section", {class: "panel play-choice", testid: "play-choice"});
  const log = el("ol", {class: "log", testid: "play-log", reversed: true});
  show(el("div", {class: "play", testid: "play"}, el("h1", {}, "Play"), status, clock, choice, stage,
    el("section", {class: "panel"}, el("h2", {}, "What happened"), log)));
  const events = [];
  let after = 0, last = null, chosen = null, skew = 0, socket = null, closed = false, hinted = null;

  const tick = () => {
    const d = last && last.decision;
    if (!d) { clock.textContent = ""; return; }
    const now = Date.now() / 1000 + skew;
    const left = Math.max(0, d.deadline - now);
    const bank = Math.max(0, Math.min(last.time_bank, d.default_at - Math.max(now, d.deadline)));
    clock.textContent = `Time left: ${left.toFixed(0)} s · time bank ${bank.toFixed(0)} s`;
  };
  every(250, tick);

  // Keyboard play: the chosen answer's Send, and each new decision's first option, take
  // the focus (the buttons are drawn again at each change).
  const focusOn = testid => { const n = choice.querySelector(`[data-testid=${testid}]`); if (n) n.focus(); };
  const send = data => { if (socket && socket.readyState === 1) socket.send(JSON.stringify(data)); };

  const drawChoice = () => {
    const d = last && last.decision;
    if (!d) {
      choice.replaceChildren(el("p", {class: "muted"}, last && last.final ? "The game is over." : "Waiting for the others…"));
      return;
    }
    const hint = last.hints && hinted && hinted.decision === d.id ? hinted : null;
    const hintBot = el("select", {"aria-label": "hint from", testid: "play-hint-bot"},
      el("option", {value: "eager"}, "eager"), el("option", {value: "random"}, "random"));
    const hints = !last.hints ? null : el("p", {class: "play-hint"},
      el("button", {type: "button", testid: "play-hint", onclick: () => send({type: "hint", bot: hintBot.value})}, "Hint"),
      " from ", hintBot,
      hint ? el("span", {testid: "play-hint-text"}, ` · ${hint.bot} would play: ${d.options[hint.option].text} ★`) : null);
    const summary = el("p", {class: "play-summary", testid: "play-summary"},
      chosen === null ? "Choose your answer." : `Your ${d.resolve ? "decision" : "turn"}: ${d.options[chosen].text}`);
    // A turn's options are grouped by what they play; each button is one offered answer
    // (for a turn, where to draw).
    const groups = new Map();
    d.options.forEach((o, i) => {
      const cut = o.kind === "turn" && o.draw ? o.text.lastIndexOf(", draw from ") : -1;
      const head = cut >= 0 ? o.text.slice(0, cut) : "";
      if (!groups.has(head)) groups.set(head, []);
      groups.get(head).push(el("button", {type: "button", class: "play-option" + (i === chosen ? " chosen" : ""),
        testid: "play-option", "data-index": i, "aria-pressed": i === chosen ? "true" : "false",
        title: o.text, onclick: () => { chosen = i; drawChoice(); focusOn("play-send"); }}, cut >= 0 ? o.text.slice(cut + 2) : o.text,
        hint && hint.option === i ? el("em", {class: "play-hinted"}, " ★") : null));
    });
    const buttons = [...groups].map(([head, list]) => head
      ? el("div", {class: "play-group"}, el("span", {class: "play-head"}, head), list) : list);
    const confirm = el("button", {type: "button", class: "play-send", testid: "play-send", disabled: chosen === null,
      onclick: () => {
        if (chosen === null) return;
        send({type: "answer", decision: d.id, option: chosen});
        chosen = null;
        last = {...last, decision: null};
        drawChoice();
      }}, "Send");
    choice.replaceChildren(el("h2", {}, d.resolve ? "Your decision: bake or decline" : "Your turn"),
      hints, el("div", {class: "play-options"}, buttons), summary, confirm);
  };

  const render = msg => {
    const v = msg.view;
    const names = v.seats.map(s => s.name);
    const me = v.seat;
    for (const e of msg.events) if (e.sequence > after) events.push(e);
    after = msg.sequence;
    skew = msg.now - Date.now() / 1000;
    const same = last && last.decision && msg.decision && last.decision.id === msg.decision.id;
    if (!same) chosen = null;
    last = msg;
    const turn = v.to_act !== null && v.to_act !== undefined ? ` · ${v.deciding ? "deciding" : "turn of"} ${names[v.to_act]}` : "";
    const counted = msg.table ? " · for the people's table" : "";
    status.textContent = msg.final ? "The game is over" : msg.status === "waiting"
      ? `You are ${names[me]} (${v.colours[me]}) · waiting for the other seats to be taken…${counted}`
      : `You are ${names[me]} (${v.colours[me]}) · round ${v.round}${turn}${counted}`;
    status.dataset.sequence = String(msg.sequence);
    status.dataset.match = msg.match;
    status.dataset.decision = msg.decision ? msg.decision.id : "";
    const top = v.oven.length ? v.oven[v.oven.length - 1] : null;
    const mine = el("section", {class: "panel", testid: "play-hand"}, el("h2", {}, "Your cards"),
      el("p", {}, "Hand: ", counts(v.hand)),
      el("p", {}, "Orders in hand: ", v.hand_orders.length ? v.hand_orders.map(o => card(o)) : el("span", {class: "muted"}, "none")),
      el("p", {}, `Waiter: ${v.waiter_cards.length} orders `, v.waiter_cards.map(o => card(o, {small: true}))));
    const table = el("section", {class: "panel", testid: "play-table"}, el("h2", {}, "The table"),
      el("p", {}, `Oven: ${v.oven.length} cards`, top ? [", top ", card(top, {small: true})] : ""),
      el("p", {}, `Supply: ${v.supply} cards`),
      el("div", {class: "scroll"}, el("table", {class: "grid"},
        el("thead", {}, el("tr", {}, ["Player", "Hand", "Orders", "Waiter", "Pizzas", "Strikes"].map(h => el("th", {}, h)))),
        el("tbody", {}, v.seats.map((s, i) => el("tr", {class: i === me ? "me" : ""},
          el("td", {}, el("span", {class: "dot col-bg-" + s.colour}), " ", s.name, i === me ? " (you)" : ""),
          el("td", {class: "num"}, s.hand_size), el("td", {class: "num"}, s.orders_in_hand),
          el("td", {class: "num"}, s.waiter), el("td", {class: "num"}, s.delivered.length),
          el("td", {class: "num"}, s.strikes)))))));
    let final = null;
    if (msg.final) {
      sessionStorage.removeItem(PLAY_KEY);
      final = el("section", {class: "panel", testid: "play-final"}, el("h2", {}, "Final table"),
        el("div", {class: "scroll"}, scoresTable(names, v.colours, {ranks: msg.final.ranks, pizzas: msg.final.delivered, winners: msg.final.winners})),
        el("p", {}, el("a", {href: msg.final.replay, testid: "play-replay"}, "Open the replay"), " · ",
          el("a", {href: "#/play", onclick: () => setTimeout(route, 0)}, "Play again")));
    }
    stage.replaceChildren(...[final, mine, table].filter(Boolean));
    log.replaceChildren(...events.slice().reverse().map(e => el("li", {}, describe(e, names))));
    drawChoice();
    if (msg.decision && !same) focusOn("play-option");
    tick();
  };

  const connect = () => {
    socket = new WebSocket(location.origin.replace(/^http/, "ws") + "/api/play");
    // A dropped connection resumes from the last event this page has shown.
    socket.onopen = () => socket.send(JSON.stringify(first.type === "resume" ? {...first, after} : first));
    socket.onmessage = m => {
      const msg = JSON.parse(m.data);
      if (msg.type === "seated") {
        sessionStorage.setItem(PLAY_KEY, JSON.stringify({token: msg.token, match: msg.match}));
        first = {type: "resume", token: msg.token, after: 0};
      } else if (msg.type === "refused") {
        if (!last) {
          sessionStorage.removeItem(PLAY_KEY);
          closed = true;
          status.textContent = "";
          choice.replaceChildren(el("div", {class: "panel error", testid: "error"}, msg.error),
            el("a", {href: "#/play", onclick: () => setTimeout(route, 0)}, "Start a new game"));
        } else status.textContent = msg.error;
      } else if (msg.type === "hint") {
        hinted = msg;
        drawChoice();
      } else if (msg.type === "seat") {
        render(msg);
        if (msg.final) closed = true;
      }
    };
    socket.onclose = () => { if (!closed) setTimeout(() => { if (!closed) connect(); }, 1000); };
  };
  connect();
  onLeave(() => { closed = true; if (socket) socket.close(); });
}

// sayso web UI, data shown with a request and forms built from a JSON Schema (workflow input, approval
// feedback): text for strings, number fields, checkboxes, selects for enums, nested objects and lists, with a
// refused answer's errors shown next to their fields. Loaded after ui.js (el, nextId), before cards.js.
"use strict";

const DECIMAL = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;  // a number as JSON and a person write it

const humanize = (key) => String(key).replace(/[_-]+/g, " ").replace(/^./, (c) => c.toUpperCase());

// A value as a person reads it. With the `schema` it answers (its `$ref`s in `root`), a choice reads as the title
// the person picked, the value behind it following, muted: "Europe (Ireland) (eu-west)".
function renderValue(value, schema = null, root = schema) {
  const s = schema ? resolveSchema(schema, root) : null;
  const choice = s && choicesOf(s)?.find((option) => JSON.stringify(option.value) === JSON.stringify(value));
  if (choice && choice.label !== String(value)) {
    return el("span", {}, choice.label, el("span", { class: "muted" }, ` (${show(value)})`));
  }
  if (value === null || value === undefined) return el("span", { class: "muted" }, "—");
  if (Array.isArray(value)) {
    if (!value.length) return el("span", { class: "muted" }, "(none)");
    const items = s?.items ?? null;
    return el("ol", { class: "value" }, value.map((item) => el("li", {}, renderValue(item, items, root))));
  }
  if (isRawNumber(value)) return el("span", {}, value.rawJSON);
  if (typeof value === "object") {
    const keys = Object.keys(value);
    const headline = ["name", "title"].find((key) => typeof value[key] === "string");
    if (headline && keys.length === 2 && typeof value.description === "string") {
      return el("span", {}, el("strong", {}, value[headline]), ` — ${value.description}`);  // an item: its name, then what it is
    }
    if (!keys.length) return el("span", { class: "muted" }, "(empty)");
    return el("dl", { class: "value" }, keys.flatMap((key) => [el("dt", {}, humanize(key)),
      el("dd", {}, renderValue(value[key], s?.properties?.[key] ?? null, root))]));
  }
  if (typeof value === "boolean") return el("span", {}, value ? "yes" : "no");
  return el("span", {}, String(value));
}

function payloadBlock(payload) {
  return el("section", { class: "payload", "aria-label": "Details" }, renderValue(payload));
}

function resolveSchema(schema, root) {
  let resolved = schema || {};
  for (let hops = 0; resolved.$ref && hops < 20; hops++) {
    const path = resolved.$ref.replace(/^#\//, "").split("/");
    resolved = path.reduce((node, part) => (node ? node[part] : undefined), root) || {};
  }
  const options = resolved.anyOf || resolved.oneOf;
  if (options) {  // `X | None`, as pydantic writes an optional field: the form asks for X, empty means null
    const real = options.filter((option) => option.type !== "null");
    if (real.length === 1) {
      return { ...resolveSchema(real[0], root), nullable: true, title: resolved.title, description: resolved.description, default: resolved.default };
    }
  }
  return resolved;
}

// Whether a text field is for sentences rather than a word: its schema says so, or its name does.
function longText(schema, label) {
  if (schema.format === "textarea" || schema["x-multiline"] === true) return true;
  if (schema.maxLength !== undefined && schema.maxLength <= 120) return false;
  return /response|feedback|note|comment|message|detail|description|summary|reason|text|body/i.test(String(label));
}

// A schema's title as a heading: `UserFeedback` reads "User feedback".
function schemaTitle(schema) {
  const title = schema?.title;
  if (!title || typeof title !== "string") return null;
  const words = title.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1).toLowerCase();
}

// A field's choices as `{value, label}`: an `enum` (its `enumNames` as labels), or choices with titles as MCP's
// forms write them, `oneOf` / `anyOf` of `{const, title}`; null where the field is not a choice.
function choicesOf(schema) {
  const options = schema?.oneOf || schema?.anyOf;
  if (Array.isArray(options) && options.length && options.every((option) => option && "const" in option)) {
    return options.map((option) => ({ value: option.const, label: String(option.title ?? option.const) }));
  }
  if (!Array.isArray(schema?.enum)) return null;
  return schema.enum.map((value, i) => ({ value, label: String(schema.enumNames?.[i] ?? value) }));
}

function typeOf(schema) {
  if (choicesOf(schema)) return "enum";
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== "null") || "any";
  return schema.type || (schema.properties ? "object" : "any");
}

// One field of a schema form: its node, a reader of its value (`undefined`: left empty), its error slots, and
// `unread`: the problems of what the person typed that the browser cannot hand over (`{loc, msg}`, as the server's).
function schemaField(schema, root, path, label, required) {
  const s = resolveSchema(schema, root);
  const type = typeOf(s);
  const errorId = nextId("field-error");
  const error = el("p", { class: "field-error", id: errorId, role: "alert", "data-loc": path.join(".") });
  const id = nextId("field");
  const title = `${s.title || humanize(label)}${required ? " *" : ""}`;
  const hint = s.description ? el("p", { class: "hint" }, s.description) : null;
  const common = { id, name: path.join(".") || "answer", "aria-describedby": errorId, "aria-required": required ? "true" : null };
  const errors = [error];
  let node; let read; let unread = () => [];
  if (type === "object" && s.properties) {
    const children = Object.entries(s.properties).map(([key, child]) =>
      schemaField(child, root, [...path, key], key, (s.required || []).includes(key)));
    children.forEach((child) => errors.push(...child.errors));
    const fields = el("div", { class: "section", id: nextId("section") }, children.map((child) => child.node));
    // An optional section (`extra: Extra | None = None`) is offered behind "Add extra": left unticked it is no answer,
    // whatever its checkboxes and defaults would read (a checkbox always reads true or false).
    const optional = path.length > 0 && (!required || s.nullable);
    const name = String(s.title || humanize(label));
    const add = optional ? el("input", { type: "checkbox", id: nextId("add"), "aria-controls": fields.id,
      onchange: () => { fields.hidden = !add.checked; } }) : null;
    fields.hidden = optional;
    const adding = add ? el("div", { class: "field check" }, add,
      el("label", { for: add.id }, `Add ${name.charAt(0).toLowerCase()}${name.slice(1)}`)) : null;
    const added = () => !add || add.checked;
    unread = () => (added() ? children.flatMap((child) => child.unread()) : []);
    node = el("fieldset", { "data-loc": path.join(".") }, path.length ? el("legend", {}, title) : null, hint,
      adding, fields, error);
    read = () => {
      if (!added()) return required ? null : undefined;
      const value = {};
      for (const [index, key] of Object.keys(s.properties).entries()) {
        const v = children[index].read();
        if (v !== undefined) value[key] = v;
      }
      return value;
    };
    return { node, read, errors, unread };
  }
  if (type === "boolean" && (!required || s.nullable) && typeof s.default !== "boolean") {
    // A yes/no that may be left unsaid (`urgent: bool | None = None`): a checkbox always reads yes or no, so "—" is
    // a choice of its own, read as no answer (or null, where the field must be there).
    const select = el("select", common, el("option", { value: "" }, "—"),
      el("option", { value: "true" }, "yes"), el("option", { value: "false" }, "no"));
    node = el("div", { class: "field" }, el("label", { for: id }, title), hint, select, error);
    read = () => (select.value === "" ? (required ? null : undefined) : select.value === "true");
  } else if (type === "boolean") {
    const input = el("input", { ...common, type: "checkbox", checked: s.default === true });
    node = el("div", { class: "field check" }, input, el("label", { for: id }, title), hint, error);
    read = () => input.checked;
  } else if (type === "enum") {
    const select = el("select", common, el("option", { value: "" }, required ? "choose…" : "—"),
      choicesOf(s).map(({ value, label }) => el("option", { value: JSON.stringify(value), selected: s.default === value }, label)));
    node = el("div", { class: "field" }, el("label", { for: id }, title), hint, select, error);
    read = () => (select.value === "" ? undefined : JSON.parse(select.value));
  } else if (type === "integer" || type === "number") {
    const input = el("input", { ...common, type: "number", step: type === "integer" ? "1" : "any", value: s.default ?? null,
      min: s.minimum ?? null, max: s.maximum ?? null });
    node = el("div", { class: "field" }, el("label", { for: id }, title), hint, input, error);
    read = () => (input.value.trim() === "" ? undefined : exactNumber(Number(input.value), input.value.trim()));
    // Text such as `4e` leaves a number field's value empty: read as left empty, the answer would lose it.
    unread = () => (input.validity.badInput ? [{ loc: path, msg: "not a number" }] : []);
  } else if (type === "string") {
    // Free text a person writes sentences into (feedback, notes, a response) gets room for them.
    const input = longText(s, label)
      ? el("textarea", { ...common, rows: 3, class: "long" }, s.default ?? "")
      : el("input", { ...common, type: "text", value: s.default ?? null });
    node = el("div", { class: "field" }, el("label", { for: id }, title), hint, input, error);
    read = () => (input.value === "" ? undefined : input.value);
  } else if (type === "array" && choicesOf(resolveSchema(s.items, root))) {
    // The schema's default is ticked: a form sent as it stands gives it, not an empty list nobody chose.
    const choices = choicesOf(resolveSchema(s.items, root));
    const ticked = new Set((Array.isArray(s.default) ? s.default : []).map((choice) => JSON.stringify(choice)));
    const name = nextId("many");
    node = el("fieldset", { class: "field", "data-loc": path.join("."), "aria-describedby": errorId }, el("legend", {}, title), hint,
      choices.map(({ value, label }) => {
        const optionId = nextId("choice");
        return el("div", {}, el("input", { type: "checkbox", name, id: optionId, value: JSON.stringify(value), checked: ticked.has(JSON.stringify(value)) }),
          el("label", { for: optionId }, label));
      }), error);
    read = () => [...node.querySelectorAll(`input[name="${name}"]:checked`)].map((input) => JSON.parse(input.value));
  } else if (type === "array" && ["string", "integer", "number"].includes(typeOf(resolveSchema(s.items, root)))) {
    const numeric = typeOf(resolveSchema(s.items, root)) !== "string";
    // Written out from its default; emptied, a list whose default has items is sent empty (else the default comes back).
    const fallback = Array.isArray(s.default) && s.default.length > 0;
    const area = el("textarea", { ...common, rows: 3 }, fallback ? s.default.map(String).join("\n") : "");
    node = el("div", { class: "field" }, el("label", { for: id }, `${title} (one per line)`), hint, area, error);
    const lines = () => area.value.split("\n").map((line) => line.trim()).filter((line) => line);
    read = () => {
      if (!lines().length && !required && !fallback) return undefined;
      return numeric ? lines().map((line) => exactNumber(Number(line), line)) : lines();
    };
    // `Number` reads `abc` as NaN (sent as null) and `0x10` as 16: a line that is no decimal number is named, not sent.
    unread = () => (numeric ? lines().flatMap((line, index) => (DECIMAL.test(line) ? []
      : [{ loc: path, msg: `line ${index + 1}: ${JSON.stringify(line)} is not a number` }])) : []);
  } else {
    // Anything else (nested lists of objects, any JSON): written as JSON; text that is not JSON is sent as text.
    const given = s.default !== undefined && s.default !== null ? JSON.stringify(s.default, null, 2) : "";
    const area = el("textarea", { ...common, rows: 4 }, given);
    node = el("div", { class: "field" }, el("label", { for: id }, `${title} (JSON)`), hint, area, error);
    read = () => {
      if (area.value.trim() === "") return undefined;
      try { return parseJSON(area.value); } catch { return area.value; }
    };
  }
  return { node, read, errors, unread };
}

// A form for a whole JSON Schema: its node, its value, and the problems of a refused answer shown by their fields.
// `refusal()` is the problem of what the browser could not read (shown by its fields), or null when all is read.
function schemaForm(schema) {
  const root = schema || {};
  const field = schemaField(root, root, [], "answer", true);
  // The control a slot describes is marked invalid while its field is refused (screen readers say so too).
  const control = (slot) => field.node.querySelector(`[aria-describedby="${slot.id}"]`);
  const showErrors = (problem) => {
    for (const slot of field.errors) {
      slot.textContent = "";
      control(slot)?.removeAttribute("aria-invalid");
    }
    const unplaced = [];
    for (const error of problem?.errors || []) {
      let loc = (error.loc || []).join(".");
      let msg = error.msg;
      // A section's missing field is said at the section (`extra: 'note' is a required property`): shown at the field.
      const missing = /^'([^']+)' is a required property$/.exec(String(msg));
      const own = missing && (loc ? `${loc}.${missing[1]}` : missing[1]);
      if (own && field.errors.some((candidate) => candidate.dataset.loc === own)) [loc, msg] = [own, "field required"];
      const slot = field.errors.find((candidate) => candidate.dataset.loc === loc)
        || field.errors.find((candidate) => loc.startsWith(`${candidate.dataset.loc}.`) && candidate.dataset.loc);
      if (slot) {
        slot.textContent = slot.textContent ? `${slot.textContent}; ${msg}` : msg;
        control(slot)?.setAttribute("aria-invalid", "true");
      }
      else unplaced.push(msg);
    }
    const top = field.errors[0];
    if (unplaced.length) top.textContent = [top.textContent, ...unplaced].filter((t) => t).join("; ");
  };
  const read = () => {
    const value = field.read();
    return value === undefined ? (typeOf(resolveSchema(root, root)) === "string" ? "" : null) : value;
  };
  const refusal = () => {
    const errors = field.unread();
    if (!errors.length) return null;
    showErrors({ errors });
    return { errors };
  };
  return { node: el("div", { class: "schema-form" }, field.node), read, showErrors, refusal };
}

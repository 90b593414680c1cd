/* grpo-lab SideControls component (lab/views/side_controls.py): the controls beside the grid that need the server.
 *
 * Rollout correlation rho (a range input), the population (prompts, Beta a and b, seed: number inputs), the
 * New draw and Reset buttons, and the stall overlay's trainer loop (a select) and its batch sizes and cap, with
 * their help as text, built from `spec` (names, labels, bounds, steps, options and help, all read in Python from the
 * lab's state, so no bound is typed here). Every text is set with textContent.
 *
 * A value goes to Python as the reader moves rho, and when a number is committed (Enter or leaving the field):
 * a number that is not one goes back to the value shown before, one out of bounds is clamped, an integer
 * rounded. Python's changes (URL, tour, reset, new draw) come back through the same parameters.
 * A button press is a count that goes up (`new_draw_clicks`, `reset_clicks`); Python answers it.
 */
function clamp(v, c) {
  v = Math.min(c.max, Math.max(c.min, v));
  return c.kind === "integer" ? Math.round(v) : v;
}

function text(tag, cls, content) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  e.textContent = content;
  return e;
}

export function render({ model, el }) {
  var spec = model.spec, box = document.createElement("div"), inputs = {};
  box.className = "side-controls";

  function show(name) {
    var c = spec.controls[name], input = inputs[name];
    var shown = c.digits === null ? String(model[name]) : Number(model[name]).toFixed(c.digits);
    input.value = shown;
    if (input.output) input.output.textContent = shown;
  }

  function field(name, range) {
    var c = spec.controls[name], label = document.createElement("label"), input = document.createElement("input");
    input.id = "sc-" + name;
    input.name = name;
    input.type = range ? "range" : "number";
    input.min = c.min;
    input.max = c.max;
    input.step = c.step;
    label.className = range ? "sc-field sc-range" : "sc-field sc-number";
    label.htmlFor = input.id;
    label.title = c.doc;
    var title = text("span", "sc-label", c.label);
    label.appendChild(title);
    if (range) {
      input.output = text("output", "sc-out", "");
      input.setAttribute("aria-label", c.label);
      label.appendChild(input.output);
    }
    label.appendChild(input);
    inputs[name] = input;
    show(name);
    input.addEventListener(range ? "input" : "change", function () {
      var v = parseFloat(input.value);
      if (!isFinite(v)) { show(name); return; }  /* not a number: the value shown before */
      v = clamp(v, c);
      if (v !== model[name]) model[name] = v;
      show(name);
    });
    model.on(name, function () { show(name); });
    return label;
  }

  function choice(name) {  /* a select of the parameter's options (the trainer loop) */
    var c = spec.controls[name], label = document.createElement("label"), select = document.createElement("select");
    select.id = "sc-" + name;
    select.name = name;
    c.options.forEach(function (o) { select.appendChild(text("option", "", o)); });
    select.value = model[name];
    label.className = "sc-field sc-select";
    label.htmlFor = select.id;
    label.title = c.doc;
    label.appendChild(text("span", "sc-label", c.label));
    label.appendChild(select);
    select.addEventListener("change", function () { model[name] = select.value; });
    model.on(name, function () { select.value = model[name]; });
    return label;
  }

  function button(label, tip, counter) {
    var b = text("button", "sc-btn", label);
    b.type = "button";
    b.title = tip;
    b.addEventListener("click", function () { model[counter] = model[counter] + 1; });
    return b;
  }

  box.appendChild(text("p", "sc-hint", spec.play_hint));
  box.appendChild(field("rho", true));
  box.appendChild(text("p", "sc-hint", spec.controls.rho.doc));
  box.appendChild(text("p", "sc-heading", spec.population_heading));
  var population = document.createElement("div");
  population.className = "sc-population";
  spec.population.forEach(function (name) { population.appendChild(field(name, false)); });
  box.appendChild(population);
  box.appendChild(text("p", "sc-hint", spec.population_hint));
  var buttons = document.createElement("div");
  buttons.className = "sc-buttons";
  buttons.appendChild(button(spec.buttons.new_draw.label, spec.buttons.new_draw.tip, "new_draw_clicks"));
  buttons.appendChild(button(spec.buttons.reset.label, spec.buttons.reset.tip, "reset_clicks"));
  box.appendChild(buttons);
  box.appendChild(text("p", "sc-heading", spec.loop_heading));
  var loop = document.createElement("div");
  loop.className = "sc-population sc-loop";
  spec.loop.forEach(function (name) {
    loop.appendChild(spec.controls[name].kind === "select" ? choice(name) : field(name, false));
  });
  box.appendChild(loop);
  box.appendChild(text("p", "sc-hint", spec.loop_hint));
  el.appendChild(box);
}

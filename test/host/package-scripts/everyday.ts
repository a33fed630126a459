// lodash-es, date-fns, yaml and uuid together, with a relative file of the script's own.
import { groupBy, sortBy } from "lodash-es";
import { addDays, formatISO } from "date-fns";
import { parse, stringify } from "yaml";
import { v4 as uuidv4, validate, v5 as uuidv5 } from "uuid";
import { label } from "./lib/label.ts";

export default () => {
  const people = [{ name: "bo", team: "b" }, { name: "al", team: "a" }, { name: "cy", team: "a" }];
  const groups = groupBy(sortBy(people, "name"), "team");
  const doc = parse("teams:\n  - a\n  - b\n") as { teams: string[] };
  const id = uuidv4();
  return {
    groups,
    day: formatISO(addDays(new Date(Date.UTC(2024, 1, 28, 12)), 2), { representation: "date" }),
    teams: doc.teams,
    yaml: stringify({ ok: true }),
    uuid: validate(id) && id[14] === "4",
    v5: uuidv5("scriptbox", uuidv5.URL),
    label: label("done"),
  };
};

"""The table readers (core/words/table.py): each turns one parsed word table (`nouns.v1.yaml`,
`attributes.v1.yaml`, `relation_semantics.v1.yaml`) into the `Words` fields of its section, as a mapping of
field name to value, refusing malformed entries with the place they sit.
"""

from __future__ import annotations

from typing import Any

from hardneg.core.words.common import Axis, Category, Scale, _names, _norm


def _load_nouns(data: dict[str, Any]) -> dict[str, Any]:
    forms = {_norm(k): _norm(v) for k, v in (data.get("forms") or {}).items()}
    irregular = {_norm(k): _norm(v) for k, v in (data.get("irregular_plurals") or {}).items()}
    known: set[str] = set()

    canon: dict[str, str] = {}
    synsets: dict[str, tuple[str, ...]] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = _names(group, f"synonyms[{i}]")
        for n in names:
            if n in canon and canon[n] != names[0]:
                raise ValueError(f"'{n}' is in two synonym sets ('{canon[n]}' and '{names[0]}')")
            canon[n] = names[0]
        synsets[names[0]] = tuple(dict.fromkeys(synsets.get(names[0], ()) + tuple(names)))
        known.update(names)

    def c(n: str) -> str:
        return canon.get(n, n)

    parents: dict[str, set[str]] = {}
    for hyper, hypos in (data.get("is_a") or {}).items():
        h = c(_norm(hyper))
        known.add(_norm(hyper))
        for n in _names(hypos, f"is_a[{hyper}]"):
            known.add(n)
            parents.setdefault(c(n), set()).add(h)
            parents.setdefault(h, set())

    wholes: dict[str, dict[str, str]] = {}
    for section, how in (("part_of", "part"), ("worn_by", "worn")):
        for whole, parts in (data.get(section) or {}).items():
            w = c(_norm(whole))
            known.add(_norm(whole))
            for n in _names(parts, f"{section}[{whole}]"):
                known.add(n)
                wholes.setdefault(c(n), {})[w] = how

    overlaps: dict[frozenset[str], str] = {}
    for i, item in enumerate(data.get("overlap") or []):
        if not isinstance(item, dict) or "names" not in item or "reason" not in item:
            raise ValueError(f"overlap[{i}] needs 'names' and 'reason'")
        names = _names(item["names"], f"overlap[{i}].names")
        others = _names(item["with"], f"overlap[{i}].with") if "with" in item else names
        known.update(names, others)
        for x in names:
            for y in others:
                if x != y:
                    overlaps[frozenset((x, y))] = str(item["reason"])

    def groups(section: str) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for group, spec in (data.get(section) or {}).items():
            if not isinstance(spec, dict) or "reason" not in spec:
                raise ValueError(f"{section}.{group} needs 'reason' and 'names'")
            for n in _names(spec.get("names"), f"{section}.{group}.names"):
                out.setdefault(n, (str(group), str(spec["reason"])))
        return out

    crowd = groups("crowd")
    not_object = groups("not_objects")
    surfaces: dict[str, str] = {}
    for kind, names in (data.get("surfaces") or {}).items():
        if kind not in ("text", "pictures"):
            raise ValueError(f"surfaces.{kind}: the kinds are 'text' and 'pictures'")
        for n in _names(names, f"surfaces.{kind}"):
            surfaces.setdefault(c(n), str(kind))
            known.add(n)
    mass = frozenset(_names(data.get("mass") or [], "mass"))
    known.update(crowd, mass)

    cats: list[Category] = []
    for cname, spec in (data.get("categories") or {}).items():
        if not isinstance(spec, dict):
            raise ValueError(f"category {cname!r} must be a mapping")
        classes: dict[str, set[str]] = {}
        members = spec.get("members")
        if members is not None:
            for n in _names(members, f"categories.{cname}.members"):
                classes.setdefault(c(n), set()).add(c(n))
                known.add(n)
        for cls_name, names in (spec.get("classes") or {}).items():
            for n in _names(names, f"categories.{cname}.classes.{cls_name}"):
                classes.setdefault(c(n), set()).add(str(cls_name))
                known.add(n)
        roots = frozenset(c(r) for r in _names(spec.get("roots") or [], f"categories.{cname}.roots"))
        cats.append(
            Category(
                name=str(cname),
                label=str(spec.get("label", cname)),
                roots=roots,
                classes={k: frozenset(v) for k, v in classes.items()},
                similar_size=bool(spec.get("similar_size", False)),
            )
        )

    return {
        "_forms": forms,
        "_pluralia": frozenset(_names(data.get("pluralia_tantum") or [], "pluralia_tantum")),
        "_invariant": frozenset(_names(data.get("invariant") or [], "invariant")),
        "_irregular": irregular,
        "_irregular_plural": {v: k for k, v in irregular.items()},
        "_singular_s": frozenset(_names(data.get("singular_s") or [], "singular_s")),
        "_article_an": frozenset(_names((data.get("articles") or {}).get("an") or [], "articles.an")),
        "_article_a": frozenset(_names((data.get("articles") or {}).get("a") or [], "articles.a")),
        "_canon": canon,
        "_synsets": synsets,
        "_parents": {k: frozenset(v) for k, v in parents.items()},
        "_wholes": wholes,
        "_overlaps": overlaps,
        "_homonyms": {_norm(k): str(v) for k, v in (data.get("homonyms") or {}).items()},
        "_mass": mass,
        "_crowd": crowd,
        "_not_object": not_object,
        "_surfaces": surfaces,
        "_categories": tuple(cats),
        "_known_nouns": frozenset(known | {c(k) for k in known}),
    }


def _load_attributes(data: dict[str, Any]) -> dict[str, Any]:
    added: dict[str, str] = {}
    for cat, words in (data.get("additions") or {}).items():
        for w in _names(words, f"additions.{cat}"):
            if w in added:
                raise ValueError(f"attribute '{w}' is added to two categories: {added[w]!r} and {cat!r}")
            added[w] = str(cat)
    synonyms: dict[str, str] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = _names(group, f"synonyms[{i}]")
        for n in names[1:]:
            synonyms[n] = names[0]
    scales: list[Scale] = []
    for sname, spec in (data.get("scales") or {}).items():
        classes: dict[str, set[str]] = {}
        for cls_name, words in (spec.get("classes") or {}).items():
            for w in _names(words, f"scales.{sname}.classes.{cls_name}"):
                classes.setdefault(synonyms.get(w, w), set()).add(str(cls_name))
        near: set[frozenset[str]] = set()
        for pair in spec.get("near") or []:
            names = _names(pair, f"scales.{sname}.near")
            for x in names:
                for y in names:
                    if x != y:
                        near.add(frozenset((x, y)))
        scales.append(
            Scale(
                name=str(sname),
                classes={k: frozenset(v) for k, v in classes.items()},
                near=frozenset(near),
                any=frozenset(synonyms.get(w, w) for w in _names(spec.get("any") or [], f"scales.{sname}.any")),
            )
        )
    antonyms: dict[str, str] = {}
    for a, b in (data.get("antonyms") or {}).items():
        antonyms[_norm(a)] = _norm(b)
        antonyms.setdefault(_norm(b), _norm(a))
    person: dict[str, str] = {}
    for group, spec in (data.get("person_attributes") or {}).items():
        for w in _names(spec.get("names"), f"person_attributes.{group}.names"):
            person.setdefault(w, f"{group}: {spec['reason']}")
    free: dict[str, frozenset[str] | None] = {}
    for cat, kinds in (data.get("free_on") or {}).items():
        if kinds != "all" and not (isinstance(kinds, list) and all(isinstance(k, str) for k in kinds)):
            raise ValueError(f"free_on.{cat} must be 'all' or a list of noun category names")
        free[str(cat)] = None if kinds == "all" else frozenset(kinds)  # category names as the noun table keys them
    return {
        "_attr_added": added,
        "_attr_synonyms": synonyms,
        "_scales": tuple(scales),
        "_antonyms": antonyms,
        "_person_attr": person,
        "_attr_free": free,
    }


def _load_relations(data: dict[str, Any]) -> dict[str, Any]:
    forms = {_norm(k): _norm(v) for k, v in (data.get("forms") or {}).items()}
    lemmas = {_norm(k): _norm(v) for k, v in (data.get("lemmas") or {}).items()}
    synonyms: dict[str, set[str]] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = _names(group, f"synonyms[{i}]")
        for n in names:
            synonyms.setdefault(n, set()).update(names)
    implies: dict[str, set[str]] = {}
    for r, implied in (data.get("implies") or {}).items():
        implies.setdefault(_norm(r), set()).update(_names(implied, f"implies[{r}]"))
    compatible: dict[frozenset[str], str] = {}
    for i, item in enumerate(data.get("compatible") or []):
        names = _names(item["names"], f"compatible[{i}].names")
        for x in names:
            for y in names:
                if x != y:
                    compatible[frozenset((x, y))] = str(item["reason"])
    axes: list[Axis] = []
    for aname, spec in (data.get("axes") or {}).items():
        poles: dict[str, set[str]] = {}
        for pole, rels in (spec.get("poles") or {}).items():
            for r in _names(rels, f"axes.{aname}.poles.{pole}"):
                poles.setdefault(r, set()).add(str(pole))
        exc = spec.get("except") or {}
        axes.append(
            Axis(
                name=str(aname),
                poles={k: frozenset(v) for k, v in poles.items()},
                except_objects=frozenset(_names(exc.get("objects") or [], f"axes.{aname}.except.objects")),
                except_relations=frozenset(_names(exc.get("relations") or [], f"axes.{aname}.except.relations")),
                except_reason=str(exc.get("reason", "")),
            )
        )
    plain: dict[str, str] = {}
    for group, spec in (data.get("no_opposite") or {}).items():
        for r in _names(spec.get("names"), f"no_opposite.{group}.names"):
            plain.setdefault(r, f"{group}: {spec['reason']}")
    converse: dict[str, str] = {}
    for a, b in (data.get("converse") or {}).items():
        converse[_norm(a)] = _norm(b)
        converse.setdefault(_norm(b), _norm(a))
    return {
        "_rel_symmetric": frozenset(_names(data.get("symmetric") or [], "symmetric")),
        "_rel_converse": converse,
        "_rel_forms": forms,
        "_rel_lemmas": lemmas,
        "_rel_synonyms": {k: frozenset(v) for k, v in synonyms.items()},
        "_rel_implies": {k: frozenset(v) for k, v in implies.items()},
        "_rel_compatible": compatible,
        "_axes": tuple(axes),
        "_rel_plain": plain,
    }

"""The table readers: each turns one parsed word table (`nouns.v1.yaml`, `attributes.v1.yaml`,
`relation_semantics.v1.yaml`) into the object that answers for it (`Nouns`, `Attributes`, `Relations`),
refusing a malformed entry with the place it sits.
"""

from __future__ import annotations

from typing import Any

from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.attributes import Attributes
from hardneg.core.words.common import Axis, Category, Scale, norm, word_list
from hardneg.core.words.forms import NounForms
from hardneg.core.words.nouns import Nouns
from hardneg.core.words.relations import Relations


def read_nouns(data: dict[str, Any]) -> Nouns:
    spellings = {norm(k): norm(v) for k, v in (data.get("forms") or {}).items()}
    irregular = {norm(k): norm(v) for k, v in (data.get("irregular_plurals") or {}).items()}
    known: set[str] = set()

    canon: dict[str, str] = {}
    synsets: dict[str, tuple[str, ...]] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = word_list(group, f"synonyms[{i}]")
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
        h = c(norm(hyper))
        known.add(norm(hyper))
        for n in word_list(hypos, f"is_a[{hyper}]"):
            known.add(n)
            parents.setdefault(c(n), set()).add(h)
            parents.setdefault(h, set())

    wholes: dict[str, dict[str, str]] = {}
    for section, how in (("part_of", "part"), ("worn_by", "worn")):
        for whole, parts in (data.get(section) or {}).items():
            w = c(norm(whole))
            known.add(norm(whole))
            for n in word_list(parts, f"{section}[{whole}]"):
                known.add(n)
                wholes.setdefault(c(n), {})[w] = how

    overlaps: dict[frozenset[str], str] = {}
    for i, item in enumerate(data.get("overlap") or []):
        if not isinstance(item, dict) or "names" not in item or "reason" not in item:
            raise ValueError(f"overlap[{i}] needs 'names' and 'reason'")
        names = word_list(item["names"], f"overlap[{i}].names")
        others = word_list(item["with"], f"overlap[{i}].with") if "with" in item else names
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
            for n in word_list(spec.get("names"), f"{section}.{group}.names"):
                out.setdefault(n, (str(group), str(spec["reason"])))
        return out

    crowd = groups("crowd")
    not_object = groups("not_objects")
    surfaces: dict[str, str] = {}
    for kind, names in (data.get("surfaces") or {}).items():
        if kind not in ("text", "pictures"):
            raise ValueError(f"surfaces.{kind}: the kinds are 'text' and 'pictures'")
        for n in word_list(names, f"surfaces.{kind}"):
            surfaces.setdefault(c(n), str(kind))
            known.add(n)
    mass = frozenset(word_list(data.get("mass") or [], "mass"))
    known.update(crowd, mass)

    cats: list[Category] = []
    for cname, spec in (data.get("categories") or {}).items():
        if not isinstance(spec, dict):
            raise ValueError(f"category {cname!r} must be a mapping")
        classes: dict[str, set[str]] = {}
        members = spec.get("members")
        if members is not None:
            for n in word_list(members, f"categories.{cname}.members"):
                classes.setdefault(c(n), set()).add(c(n))
                known.add(n)
        for cls_name, names in (spec.get("classes") or {}).items():
            for n in word_list(names, f"categories.{cname}.classes.{cls_name}"):
                classes.setdefault(c(n), set()).add(str(cls_name))
                known.add(n)
        # layers: classes worn over one another on one body region (a shirt under a jacket): one garment
        # can be called by a name of either, so a name of each shares the layer's class and contradicts nothing
        for layer, layered in (spec.get("layers") or {}).items():
            inside = set(word_list(layered, f"categories.{cname}.layers.{layer}"))
            for got in classes.values():
                if got & inside:
                    got.add(str(layer))
        roots = frozenset(c(r) for r in word_list(spec.get("roots") or [], f"categories.{cname}.roots"))
        cats.append(
            Category(
                name=str(cname),
                label=str(spec.get("label", cname)),
                roots=roots,
                classes={k: frozenset(v) for k, v in classes.items()},
                similar_size=bool(spec.get("similar_size", False)),
            )
        )

    known_nouns = frozenset(known | {c(k) for k in known})
    articles = data.get("articles") or {}
    forms = NounForms(
        spellings=spellings,
        pluralia=frozenset(word_list(data.get("pluralia_tantum") or [], "pluralia_tantum")),
        invariant=frozenset(word_list(data.get("invariant") or [], "invariant")),
        irregular=irregular,
        irregular_plural={v: k for k, v in irregular.items()},
        singular_s=frozenset(word_list(data.get("singular_s") or [], "singular_s")),
        article_an=frozenset(word_list(articles.get("an") or [], "articles.an")),
        article_a=frozenset(word_list(articles.get("a") or [], "articles.a")),
        mass=mass,
        known=known_nouns,
    )
    return Nouns(
        forms=forms,
        canon=canon,
        synsets=synsets,
        parents={k: frozenset(v) for k, v in parents.items()},
        wholes=wholes,
        overlaps=overlaps,
        homonyms={norm(k): str(v) for k, v in (data.get("homonyms") or {}).items()},
        crowd=crowd,
        not_object=not_object,
        surfaces=surfaces,
        categories=tuple(cats),
        known=known_nouns,
    )


def read_attributes(data: dict[str, Any], table: AttributeTable) -> Attributes:
    added: dict[str, str] = {}
    for cat, words in (data.get("additions") or {}).items():
        for w in word_list(words, f"additions.{cat}"):
            if w in added:
                raise ValueError(f"attribute '{w}' is added to two categories: {added[w]!r} and {cat!r}")
            added[w] = str(cat)
    synonyms: dict[str, str] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = word_list(group, f"synonyms[{i}]")
        for n in names[1:]:
            synonyms[n] = names[0]
    scales: list[Scale] = []
    for sname, spec in (data.get("scales") or {}).items():
        classes: dict[str, set[str]] = {}
        for cls_name, words in (spec.get("classes") or {}).items():
            for w in word_list(words, f"scales.{sname}.classes.{cls_name}"):
                classes.setdefault(synonyms.get(w, w), set()).add(str(cls_name))
        near: set[frozenset[str]] = set()
        for pair in spec.get("near") or []:
            names = word_list(pair, f"scales.{sname}.near")
            for x in names:
                for y in names:
                    if x != y:
                        near.add(frozenset((x, y)))
        scales.append(
            Scale(
                name=str(sname),
                classes={k: frozenset(v) for k, v in classes.items()},
                near=frozenset(near),
                any=frozenset(synonyms.get(w, w) for w in word_list(spec.get("any") or [], f"scales.{sname}.any")),
            )
        )
    antonyms: dict[str, str] = {}
    for a, b in (data.get("antonyms") or {}).items():
        antonyms[norm(a)] = norm(b)
        antonyms.setdefault(norm(b), norm(a))
    person: dict[str, str] = {}
    for group, spec in (data.get("person_attributes") or {}).items():
        for w in word_list(spec.get("names"), f"person_attributes.{group}.names"):
            person.setdefault(w, f"{group}: {spec['reason']}")
    free: dict[str, frozenset[str] | None] = {}
    for cat, kinds in (data.get("free_on") or {}).items():
        if kinds != "all" and not (isinstance(kinds, list) and all(isinstance(k, str) for k in kinds)):
            raise ValueError(f"free_on.{cat} must be 'all' or a list of noun category names")
        free[str(cat)] = None if kinds == "all" else frozenset(kinds)  # category names as the noun table keys them
    comes_in: dict[str, frozenset[str] | None] = {}
    for name, hues in (data.get("comes_in") or {}).items():
        if hues != "all" and not (isinstance(hues, list) and all(isinstance(h, str) for h in hues)):
            raise ValueError(f"comes_in.{name} must be 'all' or a list of hue classes")
        comes_in[norm(str(name))] = None if hues == "all" else frozenset(norm(h) for h in hues)
    built: list[tuple[frozenset[str], tuple[frozenset[str], frozenset[str]], str]] = []
    for i, spec in enumerate(data.get("built_of") or []):
        names = frozenset(word_list(spec.get("names"), f"built_of[{i}].names"))
        parts = spec.get("parts") or []
        if len(parts) != 2:
            raise ValueError(f"built_of[{i}].parts must be two lists of material classes")
        one, other = (frozenset(word_list(p, f"built_of[{i}].parts")) for p in parts)
        built.append((names, (one, other), str(spec.get("reason") or "")))
    return Attributes(
        table=table,
        added=added,
        synonyms=synonyms,
        scales=tuple(scales),
        antonyms=antonyms,
        person=person,
        free_on=free,
        built_of=tuple(built),
        comes_in=comes_in,
    )


def read_relations(data: dict[str, Any], forms: NounForms) -> Relations:
    spellings = {norm(k): norm(v) for k, v in (data.get("forms") or {}).items()}
    lemmas = {norm(k): norm(v) for k, v in (data.get("lemmas") or {}).items()}
    synonyms: dict[str, set[str]] = {}
    for i, group in enumerate(data.get("synonyms") or []):
        names = word_list(group, f"synonyms[{i}]")
        for n in names:
            synonyms.setdefault(n, set()).update(names)
    implies: dict[str, set[str]] = {}
    for r, implied in (data.get("implies") or {}).items():
        implies.setdefault(norm(r), set()).update(word_list(implied, f"implies[{r}]"))
    compatible: dict[frozenset[str], str] = {}
    for i, item in enumerate(data.get("compatible") or []):
        names = word_list(item["names"], f"compatible[{i}].names")
        for x in names:
            for y in names:
                if x != y:
                    compatible[frozenset((x, y))] = str(item["reason"])
    axes: list[Axis] = []
    for aname, spec in (data.get("axes") or {}).items():
        poles: dict[str, set[str]] = {}
        for pole, rels in (spec.get("poles") or {}).items():
            for r in word_list(rels, f"axes.{aname}.poles.{pole}"):
                poles.setdefault(r, set()).add(str(pole))
        exc = spec.get("except") or {}
        axes.append(
            Axis(
                name=str(aname),
                poles={k: frozenset(v) for k, v in poles.items()},
                except_objects=frozenset(word_list(exc.get("objects") or [], f"axes.{aname}.except.objects")),
                except_relations=frozenset(word_list(exc.get("relations") or [], f"axes.{aname}.except.relations")),
                except_reason=str(exc.get("reason", "")),
            )
        )
    plain: dict[str, str] = {}
    for group, spec in (data.get("no_opposite") or {}).items():
        for r in word_list(spec.get("names"), f"no_opposite.{group}.names"):
            plain.setdefault(r, f"{group}: {spec['reason']}")
    converse: dict[str, str] = {}
    for a, b in (data.get("converse") or {}).items():
        converse[norm(a)] = norm(b)
        converse.setdefault(norm(b), norm(a))
    return Relations(
        forms=forms,
        spellings=spellings,
        lemmas=lemmas,
        synonyms={k: frozenset(v) for k, v in synonyms.items()},
        implies={k: frozenset(v) for k, v in implies.items()},
        compatible=compatible,
        axes=tuple(axes),
        plain=plain,
        symmetric=frozenset(word_list(data.get("symmetric") or [], "symmetric")),
        converses=converse,
    )

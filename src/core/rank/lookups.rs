//! Lookup steps a plan needs but a question never names: `List_Artist_Albums` takes an
//! `artistId`, which `Get_Artist_ID_By_Name` gives — "the Weeknd's albums" says only the
//! second's job. An entry feeds another when one of the other's identifier inputs
//! (`artistId`, `originSkyId`, `product_id`) is what it outputs, or, with no output schema,
//! what its name says it gets. An input that takes an id among other things
//! (`username_or_id_or_url`) is fed by the one entry of its family (`Instagram_…`) that
//! outputs a bare `id`.

use std::collections::HashMap;

use super::Scored;
use super::entry::entry_text_schemas;
use crate::core::catalog::{RoutingGuide, Schema};
use crate::core::text;

/// An identifier's words, lower-cased, split as the index splits names
/// ([`text::split_words`]): `originSkyId` → `origin sky id`, `product_id` → `product id`,
/// `authorID` → `author id`.
pub(super) fn identifier_words(name: &str) -> Vec<String> {
    text::split_words(name).map(str::to_lowercase).collect()
}

fn property_names(schema: Option<&Schema>) -> Vec<String> {
    schema.map(Schema::declared_names).unwrap_or_default()
}

/// The family a name's first word names (`instagram` of `Instagram_Posts_Reels`): a name of
/// two words or more whose first is written with a capital, as a product's or service's
/// name is, and is no verb (`get_issue`, `Get_Country_Details` and `download_file` name no
/// family; review 45 M2).
pub(super) fn family_of<'w>(name: &str, name_words: &'w [String]) -> Option<&'w str> {
    let first = name_words.first().filter(|_| name_words.len() >= 2)?;
    let capital = name.starts_with(|c: char| c.is_uppercase());
    (capital && super::actions::action_of(&text::stem(first)).is_none()).then_some(first.as_str())
}

/// At most this many lookup steps per entry.
const MAX_FEEDERS: usize = 3;

/// What more entries than this give (an output `user_id`, names that all say `user` and
/// `id`) tells no lookup step apart, and is not scanned: building an index stays linear.
const MAX_GIVERS: usize = 64;

/// Per entry, the entries that feed it one of its identifier inputs (at most
/// [`MAX_FEEDERS`], in catalog order). Built through maps from what entries output and
/// what their names say, so a catalog of 10,000 entries is not compared pair by pair.
pub(super) fn feeders(guide: &RoutingGuide) -> Vec<Vec<u32>> {
    let n = guide.entry_count();
    let original: Vec<&str> = guide.entry_names().map(|(name, _)| name).collect();
    let names: Vec<Vec<String>> = original.iter().map(|n| identifier_words(n)).collect();
    let schemas: Vec<[Option<&Schema>; 2]> = (0..n).map(|i| entry_text_schemas(guide, i)).collect();
    let words_of = |s: Option<&Schema>| -> Vec<Vec<String>> {
        property_names(s)
            .iter()
            .map(|p| identifier_words(p))
            .collect()
    };
    let inputs: Vec<Vec<Vec<String>>> = schemas.iter().map(|s| words_of(s[0])).collect();
    // What entries give: an output's words; with no output schema, each word of the name.
    let mut by_output: HashMap<&[String], Vec<u32>> = HashMap::new();
    let mut by_name_word: HashMap<&str, Vec<u32>> = HashMap::new();
    let outputs: Vec<Vec<Vec<String>>> = schemas.iter().map(|s| words_of(s[1])).collect();
    for (b, outs) in outputs.iter().enumerate() {
        if outs.is_empty() {
            for w in &names[b] {
                let list = by_name_word.entry(w.as_str()).or_default();
                if list.last() != Some(&(b as u32)) {
                    list.push(b as u32);
                }
            }
        } else {
            for o in outs.iter().filter(|o| o.len() >= 2) {
                by_output.entry(o.as_slice()).or_default().push(b as u32);
            }
        }
    }
    // A bare `id` output tells nothing apart across a catalog, but within one family of
    // entries (`Instagram_Search_User` beside `Instagram_Posts_Reels`) it is the family's id.
    let mut bare_id_by_family: HashMap<&str, Vec<u32>> = HashMap::new();
    for (b, outs) in outputs.iter().enumerate() {
        let family = family_of(original[b], &names[b]);
        if let Some(family) = family.filter(|_| outs.iter().any(|o| o == &["id"])) {
            bare_id_by_family.entry(family).or_default().push(b as u32);
        }
    }
    let mut fed: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (a, wanted_all) in inputs.iter().enumerate() {
        let mut found: Vec<u32> = Vec::new();
        let mut by_family: Vec<u32> = Vec::new();
        for wanted in wanted_all {
            // `user_id_or_username` takes either: each alternative is looked up on its own.
            let alternatives: Vec<&[String]> = wanted.split(|w| w == "or").collect();
            for alt in alternatives.iter().copied() {
                // `username_or_id_or_url` takes an id among other things: its family's bare
                // id, when one entry alone gives it (two or more: which id is meant is not
                // known; review 45 M1).
                if alternatives.len() > 1 && alt == ["id"] {
                    let givers: Vec<u32> = family_of(original[a], &names[a])
                        .and_then(|f| bare_id_by_family.get(f))
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|&b| b as usize != a && !inputs[b as usize].contains(wanted))
                        .collect();
                    if let [giver] = givers[..] {
                        by_family.push(giver);
                    }
                    continue;
                }
                if alt.len() < 2 || alt.last().map(String::as_str) != Some("id") {
                    continue;
                }
                let mut givers: Vec<u32> = Vec::new();
                // `origin sky id` is fed by an output `sky id`: any tail of two words or more.
                for k in 0..=alt.len() - 2 {
                    let tail = &alt[k..];
                    if let Some(list) = by_output.get(tail).filter(|l| l.len() <= MAX_GIVERS) {
                        givers.extend(list);
                    }
                    // A name that says every word of the tail: the rarest word's entries
                    // first.
                    let lists: Option<Vec<&Vec<u32>>> =
                        tail.iter().map(|w| by_name_word.get(w.as_str())).collect();
                    let shortest = lists.and_then(|l| l.into_iter().min_by_key(|l| l.len()));
                    if let Some(shortest) = shortest.filter(|l| l.len() <= MAX_GIVERS) {
                        givers.extend(
                            shortest
                                .iter()
                                .filter(|&&b| tail.iter().all(|w| names[b as usize].contains(w))),
                        );
                    }
                }
                // A feeder does not itself take what it would give.
                givers.retain(|&b| b as usize != a && !inputs[b as usize].contains(wanted));
                found.extend(givers);
            }
        }
        found.sort_unstable();
        found.dedup();
        // A feeder named by what it outputs goes before a family's bare id.
        for b in by_family {
            if !found.contains(&b) {
                found.push(b);
            }
        }
        found.truncate(MAX_FEEDERS);
        fed[a] = found;
    }
    fed
}

impl super::RankIndex {
    /// Place the lookup steps of the first [`RankParams::lookups`](super::RankParams::lookups)
    /// entries of a full `ranking` (after a caller re-sorted it, as adding an attachment's
    /// points does): the entries that feed one of their identifier inputs go right after
    /// them, or after the first request winners (before the seconds), marked `lookup_for` when that puts them ahead of
    /// higher scores.
    pub fn place_lookups(&self, ranking: &mut super::Ranking) {
        // A full order holds every entry: nothing is fetched from outside it.
        let firsts = ranking.head.iter().take_while(|p| p.round == 0).count();
        self.place_lookups_in(&mut ranking.order, firsts, |_| None);
    }

    /// [`RankIndex::place_lookups`] on an order that may hold only the first places:
    /// `fetch` gives an entry's score when it is not among them.
    pub(super) fn place_lookups_in(
        &self,
        order: &mut Vec<Scored>,
        head: usize,
        fetch: impl Fn(usize) -> Option<Scored>,
    ) {
        order.iter_mut().for_each(|s| s.lookup_for = None);
        let k = self.params.lookups.min(order.len());
        if k == 0 || !self.any_feeders {
            return;
        }
        let anchors: Vec<usize> = order[..k].iter().map(|s| s.index).collect();
        let mut cursor = head.min(order.len());
        for a in anchors {
            let Some(p) = order.iter().position(|s| s.index == a) else {
                continue;
            };
            let mut at = cursor.max(p + 1);
            for &b in &self.feeders[a] {
                let b = b as usize;
                match order.iter().position(|s| s.index == b) {
                    Some(pos) if pos < at => {}
                    Some(pos) => {
                        let mut e = order.remove(pos);
                        if pos > at {
                            e.lookup_for = Some(a);
                        }
                        order.insert(at, e);
                        at += 1;
                    }
                    None => {
                        if let Some(mut e) = fetch(b) {
                            e.lookup_for = Some(a);
                            order.insert(at, e);
                            at += 1;
                        }
                    }
                }
            }
            cursor = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{Pack, PackMetadata};
    use crate::core::rank::RankIndex;

    fn pack(name: &str, description: &str, inputs: &[&str], outputs: &[&str]) -> Pack {
        let schema = |names: &[&str]| {
            (!names.is_empty()).then(|| {
                let props: serde_json::Map<String, serde_json::Value> = names
                    .iter()
                    .map(|n| (n.to_string(), serde_json::json!({"type": "string"})))
                    .collect();
                Schema::Full(serde_json::json!({"type": "object", "properties": props}))
            })
        };
        Pack {
            name: name.into(),
            description: description.into(),
            metadata: PackMetadata {
                input_schema: schema(inputs),
                output_schema: schema(outputs),
                ..PackMetadata::default()
            },
        }
    }

    fn guide(packs: Vec<Pack>) -> RoutingGuide {
        RoutingGuide {
            packs,
            ..RoutingGuide::default()
        }
    }

    #[test]
    fn identifiers_read_as_words() {
        assert_eq!(identifier_words("originSkyId"), ["origin", "sky", "id"]);
        assert_eq!(identifier_words("product_id"), ["product", "id"]);
        assert_eq!(identifier_words("authorID"), ["author", "id"]);
        assert_eq!(
            identifier_words("Spotify_Scraper_Get_Artist_ID_By_Name"),
            ["spotify", "scraper", "get", "artist", "id", "by", "name"]
        );
        assert!(identifier_words("__").is_empty());
    }

    /// What feeds an identifier input: an output of its name (or of its tail, `sky id` for
    /// `originSkyId`), or a name that says it when there is no output schema; never a bare
    /// `id`, the entry itself, or an entry that takes the same input.
    #[test]
    fn feeders_give_an_identifier_input() {
        let g = guide(vec![
            pack(
                "list_albums",
                "An artist's albums",
                &["artistId"],
                &["id", "name"],
            ),
            pack("get_artist_id_by_name", "Find an artist", &["name"], &[]),
            pack(
                "artist_search",
                "Search artists",
                &["q"],
                &["artist_id", "name"],
            ),
            pack(
                "artist_overview",
                "An artist's overview",
                &["artistId"],
                &[],
            ),
            pack(
                "flight_search",
                "Flights",
                &["originSkyId", "date"],
                &["flightId"],
            ),
            pack(
                "search_airport",
                "Airports",
                &["query"],
                &["skyId", "entityId"],
            ),
            pack("anything", "Gives ids", &["q"], &["id"]),
        ]);
        let fed = feeders(&g);
        assert_eq!(fed[0], [1, 2], "by name and by output");
        assert_eq!(
            fed[3],
            [1, 2],
            "overview takes artistId too: it is no feeder"
        );
        assert_eq!(fed[4], [5], "an output `skyId` gives `originSkyId`");
        for i in [1, 2, 5, 6] {
            assert!(fed[i].is_empty(), "{i}: {:?}", fed[i]);
        }
    }

    /// Inputs and outputs are read as the trimmer reads a schema's fields
    /// ([`Schema::field_names`]): through a local `$ref` and `allOf`, not only `properties`,
    /// so what the ranker links is what is sent.
    #[test]
    fn feeders_read_schemas_through_refs_and_combinators() {
        let mut g = guide(vec![
            pack("list_albums", "An artist's albums", &[], &[]),
            pack("artist_search", "Search artists", &["q"], &[]),
        ]);
        g.packs[0].metadata.input_schema = Some(Schema::Full(serde_json::json!({
            "$ref": "#/$defs/Args",
            "$defs": {"Args": {"type": "object", "properties": {"artistId": {}}}},
        })));
        g.packs[1].metadata.output_schema = Some(Schema::Full(serde_json::json!({
            "allOf": [{"properties": {"name": {}}}, {"properties": {"artist_id": {}}}],
        })));
        assert_eq!(feeders(&g)[0], [1]);
    }

    /// A giver that a hundred entries share tells no lookup apart: none is taken, and the
    /// index is not built pair by pair.
    #[test]
    fn a_giver_shared_by_many_is_no_lookup() {
        let mut packs: Vec<Pack> = (0..100)
            .map(|i| pack(&format!("get_user_id_{i}"), "", &["q"], &[]))
            .collect();
        packs.push(pack("user_orders", "Orders", &["user_id"], &["order_id"]));
        packs.push(pack("order_items", "Items", &["order_id"], &[]));
        let fed = feeders(&guide(packs));
        assert!(fed[100].is_empty(), "{:?}", fed[100]);
        assert_eq!(fed[101], [100], "one entry gives `order id`");
    }

    /// An input that takes an id among other things (`username_or_id_or_url`) is fed by its
    /// own family's bare `id` (NESTFUL: "comments on the top post by The Weeknd" needs the
    /// user looked up first); another family's, or a verb-named entry's, is no lookup.
    #[test]
    fn a_familys_bare_id_feeds_an_input_that_takes_an_id_among_others() {
        let packs = vec![
            pack(
                "Instagram_Search_User",
                "Accounts",
                &["search_query"],
                &["id", "username"],
            ),
            pack(
                "Instagram_Followers",
                "Followers",
                &["username_or_id_or_url"],
                &["id"],
            ),
            pack(
                "Instagram_Posts_Reels",
                "Posts",
                &["username_or_id_or_url"],
                &["caption"],
            ),
            pack("Twitter_Search_User", "Accounts", &["q"], &["id"]),
            pack("get_user", "A user", &["q"], &["id"]),
            pack("get_posts", "Posts", &["name_or_id"], &[]),
            pack("Instagram_Info", "About", &["id"], &[]),
        ];
        let fed = feeders(&guide(packs));
        // The followers list takes the same input, so it is no lookup for it.
        assert_eq!(fed[2], [0], "{fed:?}");
        assert_eq!(fed[1], [0], "{fed:?}");
        assert!(fed[5].is_empty(), "`get` names no family: {fed:?}");
        assert!(fed[6].is_empty(), "a bare `id` input alone: {fed:?}");
        // Review 45 M1, M2: two givers in a family leave the id unknown; a name in lower case
        // (`download_report`) names no family.
        let packs = vec![
            pack("Shop_Find_Product", "Products", &["q"], &["id"]),
            pack("Shop_Find_Store", "Stores", &["q"], &["id"]),
            pack("Shop_Reviews", "Reviews", &["name_or_id"], &[]),
            pack("download_report", "A report", &["q"], &["id"]),
            pack("download_file", "A file", &["file_name_or_id"], &[]),
        ];
        let fed = feeders(&guide(packs));
        assert!(fed[2].is_empty(), "{fed:?}");
        assert!(fed[4].is_empty(), "{fed:?}");
    }

    /// Each alternative of an input that takes one of several things is looked up as an
    /// input of its own: `user_id_or_username` is fed by what gives a `user id` (review 45
    /// L8), and `name_or_ticket_id` by what gives a `ticket id`.
    #[test]
    fn each_alternative_of_an_input_is_looked_up() {
        let packs = vec![
            pack("find_user", "Users", &["q"], &["user_id"]),
            pack("user_posts", "Posts", &["user_id_or_username"], &[]),
            pack("open_ticket", "Tickets", &["title"], &["ticket_id"]),
            pack("close_ticket", "Closes one", &["name_or_ticket_id"], &[]),
            pack("user_names", "Names", &["username_or_handle"], &[]),
        ];
        let fed = feeders(&guide(packs));
        assert_eq!(fed[1], [0], "{fed:?}");
        assert_eq!(fed[3], [2], "{fed:?}");
        assert!(fed[4].is_empty(), "no alternative is an id: {fed:?}");
    }

    /// The question names the albums; the artist's id is looked up first. The lookup step
    /// is placed right after the entry it feeds, and its explanation says so.
    #[test]
    fn a_lookup_step_is_placed_after_the_entry_it_feeds() {
        let g = guide(vec![
            pack(
                "weather_now",
                "Current weather for a city",
                &["q"],
                &["temp"],
            ),
            pack(
                "list_artist_albums",
                "List an artist's albums and singles with their track counts",
                &["artistId"],
                &["id", "name", "trackCount"],
            ),
            pack(
                "album_reviews",
                "Names and reviews of albums",
                &["q"],
                &["text"],
            ),
            pack(
                "track_lyrics",
                "Lyrics of the tracks on albums",
                &["q"],
                &["text"],
            ),
            pack(
                "get_artist_id_by_name",
                "Look up a Spotify id",
                &["name"],
                &["artist_id"],
            ),
        ]);
        let index = RankIndex::new(&g);
        let intent = "Find the names of the Weeknd's albums and how many tracks are on each";
        let ranking = index.rank(intent, None);
        let names: Vec<&str> = ranking.order.iter().map(|s| index.name(s.index)).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert_eq!(
            at("get_artist_id_by_name"),
            at("list_artist_albums") + 1,
            "{names:?}"
        );
        let lookup = &ranking.order[at("get_artist_id_by_name")];
        assert_eq!(lookup.lookup_for, Some(1), "{names:?}");
        let line = index.explain(&ranking, lookup.index, None).one_line();
        assert!(
            line.ends_with("[placed as a lookup for list_artist_albums]"),
            "{line}"
        );
        // Off, it stays where its score puts it.
        let off = RankIndex::with_params(
            &g,
            crate::core::rank::RankParams {
                lookups: 0,
                ..Default::default()
            },
        );
        let order: Vec<&str> = off
            .rank(intent, None)
            .order
            .iter()
            .map(|s| off.name(s.index))
            .collect();
        assert!(order.iter().all(|n| !n.is_empty()));
        assert_ne!(order, names, "the lookup moved");
    }

    /// In a question of two requests, the first request's winner needs a lookup step: it
    /// goes before the second-best entries of each request, which are only candidates.
    #[test]
    fn a_lookup_step_goes_before_the_second_best_of_each_request() {
        let g = guide(vec![
            pack(
                "flight_search",
                "Search flights on a route",
                &["originSkyId", "date"],
                &["flightId"],
            ),
            pack("flight_status", "The status of a flight", &["flight"], &[]),
            pack("hotel_search", "Search hotels in a city", &["city"], &[]),
            pack("hotel_reviews", "Reviews of a hotel", &["hotel"], &[]),
            pack(
                "search_airport",
                "Airports near a place",
                &["query"],
                &["skyId"],
            ),
        ]);
        let index = RankIndex::new(&g);
        let ranking = index.rank("Search flights to Rome, then find hotels in Rome", None);
        let names: Vec<&str> = ranking.order.iter().map(|s| index.name(s.index)).collect();
        assert_eq!(
            ranking.head.len(),
            4,
            "two rounds of two requests: {names:?}"
        );
        assert_eq!(
            &names[..3],
            ["flight_search", "hotel_search", "search_airport"],
            "{names:?}"
        );
        assert_eq!(ranking.order[2].lookup_for, Some(0));
    }
}

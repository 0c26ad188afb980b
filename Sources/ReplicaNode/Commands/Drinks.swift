import ArgumentParser
import Foundation
import ReplicaCore

struct Drinks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drinks",
        abstract: "Add, list and remove drinks in the replicated drink log.",
        discussion: """
            One entry per drink: drinks added at the same time on different nodes all survive; \
            a removal wins over the versions of the drink it had seen.

            Example:
              replica-node drinks add --name Espresso --mg 64 --data cluster-data/node1
            """,
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a drink and print its id.",
            discussion: """
                --mg must be 0 or more; --date is ISO 8601 (2024-05-01T08:30:00Z, fractions \
                allowed) and defaults to now. With --json, prints the whole drink.

                Examples:
                  replica-node drinks add --name Latte --mg 75 --date 2024-05-01T08:30:00Z \\
                    --data cluster-data/node1
                  replica-node drinks add --name Mocha --mg 90 --json -d cluster-data/node2
                """)

        @Option(help: "What was drunk.") var name: String
        @Option(parsing: .unconditional, help: "Caffeine in milligrams (0 or more).") var mg: Double
        @Option(help: "When, in ISO 8601 (default: now).") var date: String?
        @OptionGroup var options: ClientOptions

        /// The drink to add: the library's `Drink` checks name and caffeine (as the node does
        /// again when it receives it), so the rules live in one place.
        func drink() throws -> Drink {
            var when = Date()
            if let date {
                guard let parsed = Self.parseISO8601(date) else {
                    throw ValidationError("invalid --date \(date): expected ISO 8601 such as 2024-05-01T08:30:00Z")
                }
                when = parsed
            }
            do {
                return try Drink(name: name, mg: mg, date: when)
            } catch {
                throw ValidationError("invalid drink: \(error)")
            }
        }

        func validate() throws { _ = try drink() }

        func perform(with client: ControlClient) throws {
            let drink = try client.call(.addDrink(try drink()), expecting: \.drink)
            if options.json { Output.json(DrinkOutput.json(drink)) } else { Output.line(DrinkOutput.id(drink)) }
        }

        static func parseISO8601(_ text: String) -> Date? {
            (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
        }
    }

    struct List: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the drinks, oldest first.",
            discussion: """
                One line per drink: date, caffeine, name, id; ordered by date, then id. With \
                --json, an array of {"id", "name", "mg", "date"}. A drink this version cannot \
                read (a newer version's, or damaged) is not listed: a "warning:" line on stderr \
                names it, with --json too; the exit code stays 0.

                Examples:
                  replica-node drinks list --data cluster-data/node2
                  replica-node drinks list --json --data cluster-data/node2
                """)

        @OptionGroup var options: ClientOptions

        func perform(with client: ControlClient) throws {
            let list = try client.call(.listDrinks, expecting: \.drinkList)
            if options.json {
                Output.json(DrinkOutput.jsonArray(list.drinks))
            } else {
                for drink in list.drinks { Output.line(DrinkOutput.line(drink)) }
            }
            // On stderr in both modes: stdout stays the list tools parse.
            for problem in list.problems { Output.warning(problem) }
        }
    }

    struct Remove: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove a drink by id.",
            discussion: """
                Writes a tombstone for the drink, replicated to every node; an unknown id exits \
                with 1. Tombstones are deleted after the node's tombstone retention (7 days).

                Example (add prints the new drink's id):
                  replica-node drinks remove --data cluster-data/node1 \\
                    "$(replica-node drinks add --name Tea --mg 30 --data cluster-data/node1)"
                """)

        @Argument(help: "The drink's id (a UUID, as printed by add and list).") var id: String
        @OptionGroup var options: ClientOptions

        func validate() throws {
            guard UUID(uuidString: id) != nil else { throw ValidationError("invalid drink id \(id): expected a UUID") }
        }

        func perform(with client: ControlClient) throws {
            let drink = try client.call(.removeDrink(id: UUID(uuidString: id)!), expecting: \.drink)
            if options.json { Output.json(DrinkOutput.json(drink)) } else { Output.line("OK removed \(DrinkOutput.id(drink))") }
        }
    }
}

/// A drink as the CLI prints it: lowercase id, caffeine without a needless ".0", the date as
/// stored (to the millisecond) in ISO 8601.
enum DrinkOutput {
    static func id(_ drink: Drink) -> String { drink.id.uuidString.lowercased() }

    static func date(_ drink: Drink) -> String { TimeText.iso8601(millis: drink.dateMillis) }

    static func mg(_ drink: Drink) -> String {
        drink.mg == drink.mg.rounded() && drink.mg < 1e15 ? String(Int64(drink.mg)) : String(drink.mg)
    }

    /// `2024-05-01T08:30:00.000Z  75 mg  Latte  5f0c6a3e-...`
    static func line(_ drink: Drink) -> String { "\(date(drink))  \(mg(drink)) mg  \(TextLine.visible(drink.name))  \(id(drink))" }

    /// `Latte 75 mg at 2024-05-01T08:30:00.000Z`
    static func summary(_ drink: Drink) -> String { "\(TextLine.visible(drink.name)) \(mg(drink)) mg at \(date(drink))" }

    static func json(_ drink: Drink) -> [UInt8] { object(drink).closed }

    static func jsonArray(_ drinks: [Drink]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, drink) in drinks.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += json(drink)
        }
        return bytes + [UInt8(ascii: "]")]
    }

    static func object(_ drink: Drink) -> JSONObjectWriter {
        var object = JSONObjectWriter()
        object.field("id", id(drink))
        object.field("name", drink.name)
        object.field("mg", drink.mg)
        object.field("date", date(drink))
        return object
    }
}

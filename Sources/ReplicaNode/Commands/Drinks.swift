import ArgumentParser
import Foundation
import ReplicaCore

struct Drinks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, list and remove drinks in the replicated drink log.",
        discussion: """
            One entry per drink: drinks added at the same time on different nodes all survive; \
            a removal wins over the versions of the drink it had seen.

            Example: replica-node drinks add --name Espresso --mg 64 --data /tmp/n1
            """,
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a drink and print its id.",
            discussion: """
                --mg must be 0 or more; --date is ISO 8601 (2024-05-01T08:30:00Z, fractions \
                allowed) and defaults to now. With --json, prints the whole drink.

                Example: replica-node drinks add --name Latte --mg 75 --date 2024-05-01T08:30:00Z --data /tmp/n1
                """)

        @Option(help: "What was drunk.") var name: String
        @Option(parsing: .unconditional, help: "Caffeine in milligrams (0 or more).") var mg: Double
        @Option(help: "When, in ISO 8601 (default: now).") var date: String?
        @OptionGroup var options: ClientOptions

        func run() throws {
            guard mg >= 0, mg.isFinite else { usageError("--mg must be 0 or more (got \(mg))") }
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { usageError("--name must not be empty") }
            var when: Date?
            if let date {
                guard let parsed = parseISO8601(date) else {
                    usageError("invalid --date \(date): expected ISO 8601 such as 2024-05-01T08:30:00Z")
                }
                when = parsed
            }
            try reportingErrors {
                let reply = try options.client().call(ControlRequest(command: .drinkAdd, name: name, mg: mg, date: when))
                guard let drink = reply.drink else { return }
                if options.json { try printJSON(DrinkView(drink)) } else { print(DrinkView(drink).id) }
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the drinks, oldest first.",
            discussion: """
                One line per drink: date, caffeine, name, id; ordered by date, then id. With \
                --json, an array of {"id", "name", "mg", "date"}.

                Example: replica-node drinks list --data /tmp/n2
                """)

        @OptionGroup var options: ClientOptions

        func run() throws {
            try reportingErrors {
                let drinks = (try options.client().call(ControlRequest(command: .drinkList)).drinks ?? []).map(DrinkView.init)
                if options.json {
                    try printJSON(drinks)
                } else {
                    for drink in drinks { print("\(drink.date)  \(formatMg(drink.mg)) mg  \(drink.name)  \(drink.id)") }
                }
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a drink by id.",
            discussion: """
                Writes a tombstone for the drink, replicated to every node; an unknown id exits \
                with 1. Tombstones are deleted after the node's tombstone retention (7 days).

                Example: replica-node drinks remove 5f0c6a3e-8f1e-4c0e-9a51-0d8f5b7e2c11 --data /tmp/n1
                """)

        @Argument(help: "The drink's id (a UUID, as printed by add and list).") var id: String
        @OptionGroup var options: ClientOptions

        func run() throws {
            guard UUID(uuidString: id) != nil else { usageError("invalid drink id \(id): expected a UUID") }
            try reportingErrors {
                let reply = try options.client().call(ControlRequest(command: .drinkRemove, key: id))
                guard let drink = reply.drink else { return }
                if options.json { try printJSON(DrinkView(drink)) } else { print("OK removed \(DrinkView(drink).id)") }
            }
        }
    }
}

/// A drink as the CLI prints it: lowercase id, ISO 8601 date.
struct DrinkView: Encodable {
    var id: String
    var name: String
    var mg: Double
    var date: String

    init(_ drink: Drink) {
        id = drink.id.uuidString.lowercased()
        name = drink.name
        mg = drink.mg
        let millis = (drink.date.timeIntervalSince1970 * 1000).rounded()
        date = Date(timeIntervalSince1970: millis / 1000 + 0.000_000_5).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

func parseISO8601(_ text: String) -> Date? {
    (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
}

func formatMg(_ mg: Double) -> String {
    mg == mg.rounded() && abs(mg) < 1e15 ? String(Int(mg)) : String(mg)
}

/// A usage error as one line on stderr (`replica-node: ...`) and exit code 64.
func usageError(_ message: String) -> Never {
    printError(message)
    Foundation.exit(ExitCode.validationFailure.rawValue)
}

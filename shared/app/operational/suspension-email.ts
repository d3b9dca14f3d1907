import { SuspensionNotification } from '../../domain/retry/suspension-record';
import { Logger } from '../../ports/clock';
import { MessageBus } from '../../ports/messaging';

/**
 * The suspension email (docs/suspension.md#notification): the ready message (to, subject, text) on the notifications
 * topic, for the operator's sender (`<prefix>-notifications-outbox`). `eventId` names the
 * `destination.suspended` operational event it was sent with, when there is one. A failure is
 * logged with the message whole: the suspension stands and is visible through the admin API.
 */
export async function publishSuspensionEmail(bus: MessageBus, topic: string, notification: SuspensionNotification, log: Logger, eventId?: string): Promise<void> {
  try {
    await bus.publish(topic, {
      data: Buffer.from(JSON.stringify(notification)),
      attributes: {
        'herald-type': notification.type,
        'herald-destination': notification.destinationId,
        ...(notification.to ? { 'herald-to': notification.to } : {}),
        ...(eventId ? { 'herald-event-id': eventId } : {}),
      },
    });
  } catch (e) {
    log.error('suspension notification not published', { destinationId: notification.destinationId, error: (e as Error).message, notification });
  }
}
